#!/usr/bin/python3
"""How sensitive is the generated random-weight ResNet-50 to tiny perturbations?  It explains why
top-1 agreement between bf16 and fp32 (issue 6 asks >= 99%) cannot be reached on it by any bf16
computation, while a trained network would allow it.

    /usr/bin/python3 bench/cnn_sensitivity.py [--n 64] [--alpha 1.0,0.5]

Uses Debian's torch / torchvision (as scripts/gen_models.py does) and builds ResNet-50 with the
seed and BatchNorm calibration of gen_models.py, then for each --alpha (a factor on the last
BatchNorm of every residual branch; 1.0 is the model of tests/models/out) prints, on --n standard
normal inputs:
  * as generated: how many distinct top-1 classes the inputs get, and the top-1 agreement of fp32
    on the inputs rounded to bf16 (a 2^-9 relative change of the input only) with fp32;
  * with the classifier calibrated (each logit centred and scaled to unit spread over a separate
    batch, so that the top-1 class depends on the input rather than on the logits' fixed offsets):
    the same two numbers, and the agreement of torch's own bf16 autocast with fp32;
  * perturbation / signal: mean |logit change| from rounding the input, over the logits' spread
    across inputs.
"""
import argparse
import os
import sys

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
import gen_models  # noqa: E402


def round_bf16(x):
    i = x.view(torch.int32)
    return ((i + 0x7FFF + ((i >> 16) & 1)) & ~0xFFFF).view(torch.float32)


def agree(a, b):
    return (a.argmax(1) == b.argmax(1)).float().mean().item()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--alpha", default="1.0,0.5")
    ap.add_argument("--threads", type=int, default=2)
    a = ap.parse_args()
    import torchvision.models as tvm
    torch.set_num_threads(a.threads)
    seed = gen_models.SEEDS["resnet50"]
    x = torch.randn(a.n, 3, 224, 224, generator=torch.Generator().manual_seed(5))
    xc = torch.randn(32, 3, 224, 224, generator=torch.Generator().manual_seed(77))
    for alpha in [float(v) for v in a.alpha.split(",") if v]:
        torch.manual_seed(seed)
        m = tvm.resnet50(weights=None).eval()
        gen_models.calibrate_batchnorm(m, seed)
        feats = []
        with torch.no_grad():
            for b in m.modules():
                if isinstance(b, tvm.resnet.Bottleneck):
                    b.bn3.weight.mul_(alpha)
                    b.bn3.bias.mul_(alpha)
            r, rb = m(x), m(round_bf16(x))
            print("alpha %.2f as generated: %d distinct top-1 classes, fp32 on bf16-rounded inputs agrees "
                  "on %.1f%%" % (alpha, len(set(r.argmax(1).tolist())), 100 * agree(r, rb)), flush=True)
            hook = m.fc.register_forward_hook(lambda mod, i, o: feats.append(i[0]))
            m(xc)
            hook.remove()
            z = feats.pop() @ m.fc.weight.T
            mu, sd = z.mean(0), z.std(0)
            m.fc.weight.div_(sd[:, None])
            m.fc.bias.copy_(-mu / sd)
            r, rb = m(x), m(round_bf16(x))
            with torch.autocast("cpu", dtype=torch.bfloat16):
                r16 = m(x).float()
            ratio = ((rb - r).abs().mean() / r.std(0).mean()).item()
            print("alpha %.2f calibrated classifier: %d distinct top-1 classes, fp32 on bf16-rounded inputs "
                  "agrees on %.1f%%, torch bf16 autocast on %.1f%% (logit cosine %.4f); perturbation / signal %.4f"
                  % (alpha, len(set(r.argmax(1).tolist())), 100 * agree(r, rb), 100 * agree(r, r16),
                     torch.nn.functional.cosine_similarity(r, r16).mean().item(), ratio), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
