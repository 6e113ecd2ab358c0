#!/usr/bin/env python3
"""Precision modes: speed of ge in bf16 (or another mode) against ge fp32 and onnxruntime fp32,
and the agreement of the lower precision with ge's own fp32 results on random inputs.

    .venv/bin/python bench/precision.py [--models tests/models/out] [--only resnet50,bert_base]
        [--precision bf16|mixed_bf16|fp16|mixed_fp16] [--threads 2] [--iters 10] [--warmup 2] [--rounds 3]
        [--n 1000] [--batch 8] [--seq 128] [--no-speed] [--no-agreement] [--json F]

Speed: batch 1 (the benchmark inputs saved next to each model), all three engines at --threads
intra-op threads, in this one process; the engines take turns (--rounds turns of --iters runs
each, after --warmup), and the median and p90 are over all of an engine's runs; "paired" is the
median over rounds of onnxruntime's median turn over ge's turn of the same round (the turns of a
round lie within a second or two, so the shared machine's slow and fast phases cancel), with its
quartiles.
Agreement: --n random inputs (default 1000, as issue 6 asks) in batches of --batch through ge fp32
and ge in --precision:
  CNN (resnet50, mobilenetv2, googlenet): top-1 agreement (target >= 99%), and the mean cosine
      similarity of the logits.  Where the models folder has NAME_gratings.onnx (resnet50:
      `GEN_MODELS=resnet50_gratings scripts/gen_models.sh DIR`, which `make bench` runs), the
      agreement is measured on it: the same architecture trained here on the synthetic task of
      scripts/gratings.py, on --n images drawn from that task (their labels give each
      precision's accuracy too).  Otherwise, or with --random-weights, on the random-weight
      model with standard normal images [B,3,224,224], whose top-1 is chaotic
      (bench/cnn_sensitivity.py).
  BERT (bert_base): the cosine similarity of last_hidden_state per input (target >= 0.999:
      the minimum and the mean are printed);  inputs: uniform random token ids, full mask,
      sequence length --seq.
Targets (issue 6): ge bf16 at least 3x faster than onnxruntime fp32 on resnet50 and bert_base;
the ratio ort/ge is printed, of the medians and paired.  On 2 shared cores 1,000 BERT inputs take minutes: --n 50 for a quick
look.
"""
import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
sys.path.insert(0, os.path.join(ROOT, "scripts"))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from bench import paired_summary, percentile  # noqa: E402  (bench/bench.py: as the fp32 table computes them)

CNNS = {"resnet50", "mobilenetv2", "googlenet"}
BERTS = {"bert_base"}


def timed(run, iters):
    ts = []
    for _ in range(iters):
        t = time.perf_counter()
        run()
        ts.append((time.perf_counter() - t) * 1e3)
    return ts


def ge_session(path, threads, precision):
    import ge
    return ge.InferenceSession(path, threads=threads, precision=precision)


def ort_session(path, threads, profile_prefix=None):
    """onnxruntime as the benchmarks run it; profile_prefix: with its profiler on, writing there."""
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    if profile_prefix:
        so.enable_profiling = True
        so.profile_file_prefix = profile_prefix
    return ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])


def saved_feeds(path, sess):
    d = path[:-len(".onnx")] + ".inputs"
    return {i.name: np.load(os.path.join(d, i.name + ".npy")) for i in sess.get_inputs()}


def speed(path, a):
    """All three sessions are created first; then --rounds times each engine runs --iters timed
    runs in turn (after --warmup untimed ones in the first round), with a short pause between
    engines so that one engine's idle threads have stopped spinning before the next one runs.
    Median and p90 are over all rounds, so a noisy neighbour weighs on every engine alike."""
    engines = [("ge_" + a.precision, lambda: ge_session(path, a.threads, a.precision)),
               ("ge_fp32", lambda: ge_session(path, a.threads, "fp32")),
               ("ort_fp32", lambda: ort_session(path, a.threads))]
    sess, res, times, turns = {}, {}, {}, []
    for name, make in engines:
        t0 = time.perf_counter()
        s = make()
        feeds = saved_feeds(path, s)
        s.run(None, feeds)
        res[name] = {"first_ms": (time.perf_counter() - t0) * 1e3}
        sess[name] = (s, feeds)
        times[name] = []
    for r in range(a.rounds):
        order = [n for n, _ in engines]
        if r % 2:
            order.reverse()
        turn = {}
        for name in order:
            s, feeds = sess[name]
            # the first run of a turn, after the pause and the other engines' turns, wakes
            # sleeping threads and refills caches: untimed, for every engine alike
            timed(lambda: s.run(None, feeds), a.warmup if r == 0 else 1)
            turn[name] = timed(lambda: s.run(None, feeds), a.iters)
            times[name] += turn[name]
            time.sleep(0.1)
        turns.append({n: statistics.median(ts) for n, ts in turn.items()})
    for name, ts in times.items():
        res[name].update({"median_ms": statistics.median(ts), "p90_ms": percentile(ts, 0.9),
                          "runs": len(ts)})
        if name.startswith("ge_"):  # every run, untimed ones too
            st = sess[name][0].run_stats()
            res[name]["one_thread_runs"] = "%d/%d" % (st["runs_one_thread"], st["runs"])
    # per round, onnxruntime's median turn over each ge precision's turn of the same round (the
    # three turns lie within about a second, so the machine's slow and fast phases cancel)
    for name, _ in engines[:2]:
        pairs = [t["ort_fp32"] / t[name] for t in turns]
        res[name]["paired_speedup"] = paired_summary(pairs)
    sess.clear()
    return res


def vocab_size(path):
    import onnx
    m = onnx.load(path, load_external_data=True)
    inits = {t.name: t for t in m.graph.initializer}
    for n in m.graph.node:
        if n.op_type == "Gather" and len(n.input) > 1 and n.input[1] == "input_ids" and n.input[0] in inits:
            return int(inits[n.input[0]].dims[0])
    return 1000


def agreement(model, path, a, trained=False):
    """trained: path is a CNN trained on scripts/gratings.py, whose task draws the inputs."""
    ref = ge_session(path, a.threads, "fp32")
    low = ge_session(path, a.threads, a.precision)
    rng = np.random.default_rng(a.seed)
    done = 0
    t0 = time.perf_counter()
    if model in BERTS:
        vocab = vocab_size(path)
        names = [i.name for i in ref.get_inputs()]
        cos = []
        while done < a.n:
            b = min(a.batch, a.n - done)
            feeds = {}
            for nm in names:
                if "mask" in nm:
                    feeds[nm] = np.ones((b, a.seq), np.int64)
                elif "type" in nm:
                    feeds[nm] = np.zeros((b, a.seq), np.int64)
                else:
                    feeds[nm] = rng.integers(0, vocab, (b, a.seq), dtype=np.int64)
            r = ref.run(None, feeds)[0].reshape(b, -1).astype(np.float64)
            y = low.run(None, feeds)[0].reshape(b, -1).astype(np.float64)
            c = (r * y).sum(1) / (np.linalg.norm(r, axis=1) * np.linalg.norm(y, axis=1))
            cos.extend(c.tolist())
            done += b
        return {"inputs": done, "cos_min": float(np.min(cos)), "cos_mean": float(np.mean(cos)),
                "target_met": bool(np.min(cos) >= 0.999), "seconds": time.perf_counter() - t0}
    name = ref.get_inputs()[0].name
    if trained:
        import gratings
        task_rng = np.random.RandomState(a.seed)
    agree = 0
    right_ref = right_low = 0
    cos = []
    # The ceiling of any bf16 computation on this model: ge fp32 on the inputs rounded to bf16
    # (a 0.2% perturbation) against ge fp32 on the exact inputs, over the first --ceiling inputs.
    # Models with random weights amplify such perturbations far more than trained ones do.
    ceil_agree = ceil_done = 0
    while done < a.n:
        b = min(a.batch, a.n - done)
        if trained:
            x, label = gratings.images(b, task_rng, 224)
        else:
            x = rng.standard_normal((b, 3, 224, 224)).astype(np.float32)
        r = ref.run(None, {name: x})[0].reshape(b, -1).astype(np.float64)
        y = low.run(None, {name: x})[0].reshape(b, -1).astype(np.float64)
        agree += int((r.argmax(1) == y.argmax(1)).sum())
        if trained:
            right_ref += int((r.argmax(1) == label).sum())
            right_low += int((y.argmax(1) == label).sum())
        if ceil_done < a.ceiling:
            xb = ((x.view(np.uint32) + np.uint32(0x7FFF) + ((x.view(np.uint32) >> 16) & 1)) & np.uint32(0xFFFF0000)).view(np.float32)
            rb = ref.run(None, {name: xb})[0].reshape(b, -1)
            ceil_agree += int((r.argmax(1) == rb.argmax(1)).sum())
            ceil_done += b
        cos.extend(((r * y).sum(1) / (np.linalg.norm(r, axis=1) * np.linalg.norm(y, axis=1))).tolist())
        done += b
    return {"inputs": done, "top1_agreement": agree / done, "cos_mean": float(np.mean(cos)),
            "target_met": bool(agree / done >= 0.99), "seconds": time.perf_counter() - t0,
            "fp32_bf16_input_top1": ceil_agree / ceil_done if ceil_done else None, "ceiling_inputs": ceil_done,
            "model": os.path.basename(path), "trained": trained,
            "accuracy_fp32": right_ref / done if trained else None,
            "accuracy_low": right_low / done if trained else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", default=os.path.join(ROOT, "tests", "models", "out"))
    ap.add_argument("--only", default="resnet50,bert_base")
    ap.add_argument("--precision", default="bf16")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--iters", type=int, default=10)
    ap.add_argument("--warmup", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=3,
                    help="speed: the engines take turns this many times (--iters runs each turn)")
    ap.add_argument("--n", type=int, default=1000, help="random inputs for the agreement (default 1000)")
    ap.add_argument("--batch", type=int, default=8, help="batch size of the agreement runs")
    ap.add_argument("--seq", type=int, default=128, help="BERT sequence length of the agreement runs")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ceiling", type=int, default=64,
                    help="CNN inputs on which to measure fp32 with bf16-rounded inputs (0: skip)")
    ap.add_argument("--random-weights", action="store_true",
                    help="CNN agreement on the random-weight model even where a trained one exists")
    ap.add_argument("--no-speed", action="store_true")
    ap.add_argument("--no-agreement", action="store_true")
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", str(a.threads))
    out = {}
    for model in [m for m in a.only.split(",") if m]:
        path = os.path.join(a.models, model + ".onnx")
        if not os.path.exists(path):
            print("%s: %s is missing (generate the models: make models)" % (model, path))
            continue
        out[model] = {}
        if not a.no_speed:
            sp = speed(path, a)
            out[model]["speed"] = sp
            low, f32, ort = sp["ge_" + a.precision], sp["ge_fp32"], sp["ort_fp32"]
            print("%-12s speed (batch 1, %d threads, %d rounds of %d runs, median/p90 ms): ge %s %.1f/%.1f | ge fp32 %.1f/%.1f | "
                  "ort fp32 %.1f/%.1f | ort/ge-%s %.2fx, paired %.2fx (%.2f-%.2f; 95%% CI %s) (target >= 3x) | "
                  "ge fp32/ge-%s %.2fx"
                  % (model, a.threads, a.rounds, a.iters, a.precision, low["median_ms"], low["p90_ms"], f32["median_ms"],
                     f32["p90_ms"], ort["median_ms"], ort["p90_ms"], a.precision,
                     ort["median_ms"] / low["median_ms"], low["paired_speedup"]["median"],
                     low["paired_speedup"]["q1"], low["paired_speedup"]["q3"],
                     "-" if low["paired_speedup"]["ci_lo"] is None else
                     "%.2f-%.2f" % (low["paired_speedup"]["ci_lo"], low["paired_speedup"]["ci_hi"]),
                     a.precision, f32["median_ms"] / low["median_ms"]),
                  flush=True)
            if a.threads > 1:
                print("%-12s ge runs on one thread (adaptive thread count): %s %s, fp32 %s"
                      % (model, a.precision, low["one_thread_runs"], f32["one_thread_runs"]), flush=True)
        if not a.no_agreement and (model in CNNS or model in BERTS):
            trained_path = os.path.join(a.models, model + "_gratings.onnx")
            trained = model in CNNS and not a.random_weights and os.path.exists(trained_path)
            ag = agreement(model, trained_path if trained else path, a, trained)
            out[model]["agreement"] = ag
            if model in BERTS:
                print("%-12s agreement (%s vs ge fp32, %d inputs, seq %d): cosine min %.6f mean %.6f "
                      "(target >= 0.999: %s) [%.0f s]"
                      % (model, a.precision, ag["inputs"], a.seq, ag["cos_min"], ag["cos_mean"],
                         "met" if ag["target_met"] else "NOT met", ag["seconds"]), flush=True)
            else:
                what = ("%s, trained on scripts/gratings.py; %d task images" % (ag["model"], ag["inputs"])
                        if ag["trained"] else "%s, random weights; %d normal images" % (ag["model"], ag["inputs"]))
                print("%-12s agreement (%s vs ge fp32, %s): top-1 %.2f%% (target >= 99%%: %s), "
                      "logit cosine mean %.6f [%.0f s]"
                      % (model, a.precision, what, 100 * ag["top1_agreement"],
                         "met" if ag["target_met"] else "NOT met", ag["cos_mean"], ag["seconds"]), flush=True)
                if ag["trained"]:
                    print("%-12s   task accuracy against the labels: ge fp32 %.2f%%, ge %s %.2f%%"
                          % (model, 100 * ag["accuracy_fp32"], a.precision, 100 * ag["accuracy_low"]), flush=True)
                if ag["fp32_bf16_input_top1"] is not None:
                    print("%-12s   ceiling: ge fp32 with the inputs rounded to bf16 agrees with ge fp32 on "
                          "%.2f%% of %d inputs (the model's own sensitivity)"
                          % (model, 100 * ag["fp32_bf16_input_top1"], ag["ceiling_inputs"]), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
