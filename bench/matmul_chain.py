#!/usr/bin/env python3
"""How fast can any engine run a transformer's float32 matmuls here?  ge against onnxruntime on
chains of MatMul nodes of one transformer shape, with the weights hot (one weight matrix, used
once per run: it stays in cache between runs) and cold (--layers distinct matrices, as in a
transformer, more than the caches hold: each is streamed from memory once per run).

    .venv/bin/python bench/matmul_chain.py [--shape 128,768,768] [--layers 60] [--threads 1,2]
                                           [--iters 20] [--rounds 3]

Prints per engine the median ms per run and the GFLOP/s of one matmul, and the ratio ge/ort.
The models are written to a temporary directory (random weights, seeded); ge runs through its
Python package, onnxruntime with intra_op_num_threads=N, sequential.  The engines take turns
--rounds times, in this one process, with a pause between turns.
"""
import argparse
import os
import statistics
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))


def chain_model(path, m, k, layers, seed=0):
    import onnx
    from onnx import TensorProto, helper, numpy_helper
    rng = np.random.default_rng(seed)
    nodes, inits, prev = [], [], "x"
    for i in range(layers):
        w = (rng.standard_normal((k, k)) / np.sqrt(k)).astype(np.float32)
        inits.append(numpy_helper.from_array(w, "w%d" % i))
        nodes.append(helper.make_node("MatMul", [prev, "w%d" % i], ["y%d" % i]))
        prev = "y%d" % i
    g = helper.make_graph(nodes, "chain", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, m, k])],
                          [helper.make_tensor_value_info(prev, TensorProto.FLOAT, [1, m, k])], inits)
    onnx.save(helper.make_model(g, ir_version=8, opset_imports=[helper.make_opsetid("", 17)]), path)


def sessions(path, threads):
    import ge
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    return {"ge": ge.InferenceSession(path, threads=threads),
            "ort": ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", default="128,768,768", help="M,K,N of one matmul (N must equal K: a chain)")
    ap.add_argument("--layers", type=int, default=60, help="distinct weight matrices of the cold chain")
    ap.add_argument("--threads", default="1,2")
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    m, k, n = (int(v) for v in a.shape.split(","))
    if n != k:
        sys.exit("matmul_chain: --shape needs N == K (each matmul feeds the next)")
    flop = 2.0 * m * k * n
    with tempfile.TemporaryDirectory() as d:
        cases = []
        for name, layers in (("hot", 1), ("cold", a.layers)):
            p = os.path.join(d, name + ".onnx")
            chain_model(p, m, k, layers)
            cases.append((name, layers, p))
        print("matmul chain [%d x %d] x [%d x %d], float32" % (m, k, k, n))
        print("%-5s %4s %3s  %10s %8s  %10s %8s  %7s" % ("case", "mats", "thr", "ge ms", "GFLOP/s",
                                                        "ort ms", "GFLOP/s", "ge/ort"))
        for thr in [int(t) for t in a.threads.split(",") if t]:
            os.environ["OMP_NUM_THREADS"] = str(thr)
            for name, layers, p in cases:
                ss = sessions(p, thr)
                x = np.random.default_rng(1).standard_normal((1, m, k)).astype(np.float32)
                iters = a.iters * (20 if layers == 1 else 1)  # hot runs are short: more of them
                ts = {e: [] for e in ss}
                for r in range(a.rounds):
                    for e in (["ge", "ort"] if r % 2 == 0 else ["ort", "ge"]):
                        s = ss[e]
                        for _ in range(3 if r == 0 else 0):
                            s.run(None, {"x": x})
                        for _ in range(iters):
                            t0 = time.perf_counter()
                            s.run(None, {"x": x})
                            ts[e].append((time.perf_counter() - t0) * 1e3)
                        time.sleep(0.1)
                med = {e: statistics.median(v) for e, v in ts.items()}
                gf = {e: flop * layers / (med[e] * 1e-3) / 1e9 for e in med}
                print("%-5s %4d %3d  %10.3f %8.1f  %10.3f %8.1f  %7.2f" % (name, layers, thr, med["ge"], gf["ge"],
                                                                       med["ort"], gf["ort"], med["ge"] / med["ort"]),
                      flush=True)
                del ss
    return 0


if __name__ == "__main__":
    sys.exit(main())
