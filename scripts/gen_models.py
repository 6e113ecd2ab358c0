#!/usr/bin/env python3
"""Exports the five reference architectures to ONNX with random, seeded weights, and (on request)
one CNN trained here on a synthetic task.

Run with Debian's python3 (torch 1.13, torchvision 0.14), not the venv:

    /usr/bin/python3 scripts/gen_models.py --out tests/models/out [--models resnet50,bert_base]
                                            [--small] [--opset 14]

For each model NAME it writes OUT/NAME.onnx and one deterministic input set as
OUT/NAME.inputs/<input_name>.npy.  Nothing is downloaded: weights are random (seeded).

Models:
  resnet50, mobilenetv2, googlenet   torchvision CNNs, input float32 [batch, 3, 224, 224]
  bert_base                          BERT-base encoder (post-LN, exact GELU), inputs
                                     input_ids/attention_mask int64 [batch, seq], seq 128
  gpt2                               GPT-2-style decoder (pre-LN, tanh GELU, causal mask, tied
                                     LM head), input input_ids int64 [batch, seq], seq 64

  resnet50_gratings                  ResNet-50 (16 classes) trained for a few minutes on the
                                     synthetic grating-orientation task of scripts/gratings.py,
                                     so that its predictions have a trained network's margins;
                                     input float32 [batch, 3, 224, 224].  Not in the default set
                                     (training takes ~7 minutes on 2 cores); bench/precision.py
                                     measures the bf16 top-1 agreement on it.

--small keeps the same architectures but shrinks the transformers (2 layers, small vocab)
for quick iteration; CNNs are unchanged.  Use a different --out for it.
"""
import argparse
import math
import os
import sys
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import gratings  # noqa: E402

CNNS = ("resnet50", "mobilenetv2", "googlenet")
TRANSFORMERS = ("bert_base", "gpt2")
TRAINED = ("resnet50_gratings",)
DEFAULT_MODELS = CNNS + TRANSFORMERS
ALL_MODELS = DEFAULT_MODELS + TRAINED
SEEDS = {"resnet50": 1, "mobilenetv2": 2, "googlenet": 3, "bert_base": 4, "gpt2": 5,
         "resnet50_gratings": 6}
# resnet50_gratings: SGD steps, batch and image size of its training (the task is
# resolution-free: the net trained on 64x64 images classifies 224x224 ones as well)
TRAIN_STEPS, TRAIN_BATCH, TRAIN_SIZE = 600, 32, 64


# ----------------------------------------------------------------------------- BERT

class BertSelfAttention(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.query = nn.Linear(hidden, hidden)
        self.key = nn.Linear(hidden, hidden)
        self.value = nn.Linear(hidden, hidden)

    def split(self, x):
        b, t = x.size(0), x.size(1)
        return x.view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x, mask_add):
        q = self.split(self.query(x))
        k = self.split(self.key(x))
        v = self.split(self.value(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        scores = scores + mask_add
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        return ctx.view(ctx.size(0), ctx.size(1), self.heads * self.head_dim)


class BertLayer(nn.Module):
    def __init__(self, hidden, heads, ffn, eps):
        super().__init__()
        self.attention = BertSelfAttention(hidden, heads)
        self.attn_out = nn.Linear(hidden, hidden)
        self.attn_norm = nn.LayerNorm(hidden, eps=eps)
        self.intermediate = nn.Linear(hidden, ffn)
        self.output = nn.Linear(ffn, hidden)
        self.out_norm = nn.LayerNorm(hidden, eps=eps)

    def forward(self, x, mask_add):
        a = self.attn_out(self.attention(x, mask_add))
        x = self.attn_norm(x + a)
        h = F.gelu(self.intermediate(x))  # exact (erf) GELU
        return self.out_norm(x + self.output(h))


class BertEncoder(nn.Module):
    def __init__(self, vocab=30522, hidden=768, layers=12, heads=12, ffn=3072,
                 max_pos=512, type_vocab=2, eps=1e-12):
        super().__init__()
        self.word_embeddings = nn.Embedding(vocab, hidden)
        self.position_embeddings = nn.Embedding(max_pos, hidden)
        self.token_type_embeddings = nn.Embedding(type_vocab, hidden)
        self.emb_norm = nn.LayerNorm(hidden, eps=eps)
        self.layers = nn.ModuleList([BertLayer(hidden, heads, ffn, eps) for _ in range(layers)])
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        for m in self.modules():  # BERT's initialisation
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, input_ids, attention_mask):
        seq = input_ids.size(1)
        pos = self.position_ids[:, :seq]
        segments = torch.zeros_like(input_ids)
        x = (self.word_embeddings(input_ids) + self.position_embeddings(pos)
             + self.token_type_embeddings(segments))
        x = self.emb_norm(x)
        # additive mask: 0 where attended, -10000 where padded; [batch, 1, 1, seq]
        mask = attention_mask.unsqueeze(1).unsqueeze(2).to(torch.float32)
        mask_add = (1.0 - mask) * -10000.0
        for layer in self.layers:
            x = layer(x, mask_add)
        return x


# ----------------------------------------------------------------------------- GPT-2

def gelu_tanh(x):
    return 0.5 * x * (1.0 + torch.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * torch.pow(x, 3.0))))


class GPT2Attention(nn.Module):
    def __init__(self, hidden, heads, max_pos):
        super().__init__()
        self.heads = heads
        self.head_dim = hidden // heads
        self.q = nn.Linear(hidden, hidden)
        self.k = nn.Linear(hidden, hidden)
        self.v = nn.Linear(hidden, hidden)
        self.proj = nn.Linear(hidden, hidden)
        causal = torch.tril(torch.ones(max_pos, max_pos, dtype=torch.bool))
        self.register_buffer("causal", causal.view(1, 1, max_pos, max_pos), persistent=False)
        self.register_buffer("masked_value", torch.tensor(-1e9), persistent=False)

    def split(self, x):
        b, t = x.size(0), x.size(1)
        return x.view(b, t, self.heads, self.head_dim).permute(0, 2, 1, 3)

    def forward(self, x):
        t = x.size(1)
        q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
        scores = torch.matmul(q, k.transpose(-1, -2)) / math.sqrt(self.head_dim)
        mask = self.causal[:, :, :t, :t]
        scores = torch.where(mask, scores, self.masked_value)
        probs = torch.softmax(scores, dim=-1)
        ctx = torch.matmul(probs, v).permute(0, 2, 1, 3).contiguous()
        ctx = ctx.view(ctx.size(0), ctx.size(1), self.heads * self.head_dim)
        return self.proj(ctx)


class GPT2Block(nn.Module):
    def __init__(self, hidden, heads, max_pos, eps):
        super().__init__()
        self.ln_1 = nn.LayerNorm(hidden, eps=eps)
        self.attn = GPT2Attention(hidden, heads, max_pos)
        self.ln_2 = nn.LayerNorm(hidden, eps=eps)
        self.fc = nn.Linear(hidden, 4 * hidden)
        self.fc_proj = nn.Linear(4 * hidden, hidden)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.fc_proj(gelu_tanh(self.fc(self.ln_2(x))))


class GPT2(nn.Module):
    def __init__(self, vocab=50257, hidden=768, layers=12, heads=12, max_pos=1024, eps=1e-5):
        super().__init__()
        self.wte = nn.Embedding(vocab, hidden)
        self.wpe = nn.Embedding(max_pos, hidden)
        self.blocks = nn.ModuleList([GPT2Block(hidden, heads, max_pos, eps) for _ in range(layers)])
        self.ln_f = nn.LayerNorm(hidden, eps=eps)
        self.register_buffer("position_ids", torch.arange(max_pos).unsqueeze(0), persistent=False)
        for m in self.modules():  # GPT-2's initialisation
            if isinstance(m, (nn.Linear, nn.Embedding)):
                nn.init.normal_(m.weight, mean=0.0, std=0.02)
                if isinstance(m, nn.Linear) and m.bias is not None:
                    nn.init.zeros_(m.bias)

    def forward(self, input_ids):
        t = input_ids.size(1)
        x = self.wte(input_ids) + self.wpe(self.position_ids[:, :t])
        for block in self.blocks:
            x = block(x)
        x = self.ln_f(x)
        return torch.matmul(x, self.wte.weight.t())  # tied LM head


# ----------------------------------------------------------------------------- export

def build(name, small):
    import torchvision.models as tvm
    if name == "resnet50":
        return tvm.resnet50(weights=None)
    if name == "mobilenetv2":
        return tvm.mobilenet_v2(weights=None)
    if name == "googlenet":
        return tvm.googlenet(weights=None, aux_logits=False, init_weights=True)
    if name == "resnet50_gratings":
        return tvm.resnet50(weights=None, num_classes=gratings.CLASSES, zero_init_residual=True)
    if name == "bert_base":
        return BertEncoder(vocab=1000, layers=2) if small else BertEncoder()
    if name == "gpt2":
        return GPT2(vocab=1000, layers=2) if small else GPT2()
    raise ValueError(name)


def calibrate_batchnorm(model, seed):
    """Sets every BatchNorm's running statistics from one random batch, so that activations
    stay near unit scale through the network (random init with mean 0 / var 1 statistics lets
    them shrink towards 0, which would make the numerical comparisons meaningless)."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    for m in bns:
        m.reset_running_stats()
        m.momentum = None  # cumulative average: exactly this batch's statistics
    g = torch.Generator().manual_seed(seed + 2000)
    x = torch.randn(4, 3, 224, 224, generator=g)
    model.train()
    with torch.no_grad():
        model(x)
    model.eval()


def train_gratings(model, seed):
    """Trains model on scripts/gratings.py's task: SGD with Nesterov momentum and a one-cycle
    learning rate, fresh images every step.  Prints the loss and, at the end, the accuracy on
    held-out 224x224 images (about 90%: the orientations near a class boundary stay ambiguous)."""
    rng = np.random.RandomState(seed)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9, weight_decay=5e-5, nesterov=True)
    sched = torch.optim.lr_scheduler.OneCycleLR(opt, max_lr=0.2, total_steps=TRAIN_STEPS, pct_start=0.2)
    model.train()
    t0 = time.time()
    for step in range(TRAIN_STEPS):
        x, y = gratings.images(TRAIN_BATCH, rng, TRAIN_SIZE)
        loss = F.cross_entropy(model(torch.from_numpy(x)), torch.from_numpy(y))
        opt.zero_grad()
        loss.backward()
        opt.step()
        sched.step()
        if step % 100 == 0 or step == TRAIN_STEPS - 1:
            print("gen_models:   step %3d/%d  loss %.3f  %5.0fs" % (step, TRAIN_STEPS, loss.item(), time.time() - t0),
                  flush=True)
    model.eval()
    x, y = gratings.images(128, np.random.RandomState(seed + 3000), 224)
    with torch.no_grad():
        pred = torch.cat([model(torch.from_numpy(x[i:i + 16])).argmax(1) for i in range(0, len(x), 16)])
    print("gen_models:   accuracy on 128 held-out 224x224 images: %.1f%%"
          % (100.0 * (pred.numpy() == y).mean()), flush=True)


def make_inputs(name, model, seed):
    """Deterministic inputs as an ordered list of (name, numpy array)."""
    rng = np.random.RandomState(seed + 1000)
    if name in TRAINED:
        return [("input", gratings.images(1, rng, 224)[0])]
    if name in CNNS:
        return [("input", rng.standard_normal((1, 3, 224, 224)).astype(np.float32))]
    vocab = model.word_embeddings.num_embeddings if name == "bert_base" else model.wte.num_embeddings
    if name == "bert_base":
        seq = 128
        ids = rng.randint(0, vocab, size=(1, seq)).astype(np.int64)
        mask = np.ones((1, seq), dtype=np.int64)
        mask[:, 100:] = 0  # the last 28 positions are padding
        ids[:, 100:] = 0
        return [("input_ids", ids), ("attention_mask", mask)]
    seq = 64
    return [("input_ids", rng.randint(0, vocab, size=(1, seq)).astype(np.int64))]


def export(name, out_dir, small, opset):
    t0 = time.time()
    torch.manual_seed(SEEDS[name])
    model = build(name, small).eval()
    if name in CNNS:
        calibrate_batchnorm(model, SEEDS[name])
    if name in TRAINED:
        train_gratings(model, SEEDS[name])
    inputs = make_inputs(name, model, SEEDS[name])
    in_names = [n for n, _ in inputs]
    args = tuple(torch.from_numpy(a) for _, a in inputs)
    if name in CNNS or name in TRAINED:
        out_names = ["output"]
        dyn = {"input": {0: "batch"}, "output": {0: "batch"}}
    else:
        out_names = ["last_hidden_state"] if name == "bert_base" else ["logits"]
        dyn = {n: {0: "batch", 1: "sequence"} for n in in_names + out_names}
    onnx_path = os.path.join(out_dir, name + ".onnx")
    tmp_path = onnx_path + ".tmp"
    torch.onnx.export(model, args, tmp_path, input_names=in_names, output_names=out_names,
                      dynamic_axes=dyn, opset_version=opset, do_constant_folding=True,
                      export_params=True)
    in_dir = os.path.join(out_dir, name + ".inputs")
    os.makedirs(in_dir, exist_ok=True)
    for n, a in inputs:
        np.save(os.path.join(in_dir, n + ".npy"), a)
    os.replace(tmp_path, onnx_path)
    size = os.path.getsize(onnx_path) / 1e6
    print("gen_models: %-12s opset %d  %7.1f MB  %5.1fs" % (name, opset, size, time.time() - t0),
          flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", required=True, help="output folder")
    ap.add_argument("--models", default=",".join(DEFAULT_MODELS),
                    help="comma-separated subset of: " + ", ".join(ALL_MODELS))
    ap.add_argument("--small", action="store_true", help="2-layer transformers for quick iteration")
    ap.add_argument("--opset", type=int, default=14)
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args(argv)
    names = [m for m in a.models.split(",") if m]
    bad = [m for m in names if m not in ALL_MODELS]
    if bad:
        ap.error("unknown model(s): %s (known: %s)" % (", ".join(bad), ", ".join(ALL_MODELS)))
    torch.set_num_threads(a.threads)
    os.makedirs(a.out, exist_ok=True)
    for n in names:
        print("gen_models: exporting %s%s ..." % (n, " (small)" if a.small else ""), flush=True)
        export(n, a.out, a.small, a.opset)
    return 0


if __name__ == "__main__":
    sys.exit(main())
