"""Writes reduce_ort_cases.txt: random single-node cases for the reduce family (older opsets,
more dtypes, every Resize mode) with onnxruntime's outputs as the reference.  Read by
tests/unit/test_ops_reduce.c (same format as reduce_node_cases.txt).

Run from the repository root with the venv:  .venv/bin/python tests/unit/data/gen_reduce_ort_cases.py
"""
import itertools
import os
import sys

import numpy as np
import onnx
import onnxruntime as ort
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gen_reduce_cases import attr_line, tensor_line  # noqa: E402

rng = np.random.default_rng(1234)
NP2ONNX = {np.float32: TensorProto.FLOAT, np.float16: TensorProto.FLOAT16,
           np.float64: TensorProto.DOUBLE, np.int8: TensorProto.INT8, np.int16: TensorProto.INT16,
           np.int32: TensorProto.INT32, np.int64: TensorProto.INT64, np.uint8: TensorProto.UINT8,
           np.uint16: TensorProto.UINT16, np.uint32: TensorProto.UINT32,
           np.uint64: TensorProto.UINT64, np.bool_: TensorProto.BOOL}

lines = []
count = 0
skipped = 0


def rand(shape, dt):
    if dt in (np.float32, np.float16, np.float64):
        return (rng.standard_normal(shape) * 2).astype(dt)
    if dt == np.bool_:
        return rng.integers(0, 2, shape).astype(dt)
    info = np.iinfo(dt)
    lo, hi = max(info.min, -50), min(info.max, 50)
    return rng.integers(lo, hi + 1, shape).astype(dt)


def add(name, op, opset, inputs, n_out, **attrs):
    """inputs: list of numpy arrays or None (omitted)."""
    global count, skipped
    in_names = [f"x{i}" if a is not None else "" for i, a in enumerate(inputs)]
    out_names = [f"y{i}" for i in range(n_out)]
    node = helper.make_node(op, in_names, out_names, **attrs)
    gin = [helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(a.dtype), a.shape)
           for n, a in zip(in_names, inputs) if a is not None]
    gout = [onnx.ValueInfoProto(name=n) for n in out_names]
    g = helper.make_graph([node], "g", gin, gout)
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 8
    try:
        so = ort.SessionOptions()
        so.log_severity_level = 4
        sess = ort.InferenceSession(m.SerializeToString(), so, providers=["CPUExecutionProvider"])
        feeds = {n: a for n, a in zip(in_names, inputs) if a is not None}
        outs = sess.run(None, feeds)
    except Exception:
        skipped += 1
        return
    # (RoiAlign-10 has no coordinate_transformation_mode: the reference applies the newer
    # default, onnxruntime the opset-10 behaviour, output_half_pixel)
    if (op == "Resize" and opset >= 11) or (op == "RoiAlign" and opset >= 16) or op in (
            "GridSample", "NonMaxSuppression", "MaxUnpool", "MaxRoiPool"):
        # the conformance suite checks against onnx's reference implementation, which differs
        # from onnxruntime in places (align_corners length, integer rounding): prefer it
        try:
            ref = ReferenceEvaluator(m).run(None, feeds)
            outs = [np.asarray(r).astype(o.dtype) for r, o in zip(ref, outs)]
        except Exception:
            pass
    at = [attr_line(a) for a in node.attribute]
    il = [tensor_line("in", a, helper.np_dtype_to_tensor_dtype(a.dtype)) if a is not None else "in none" for a in inputs]
    ol = [tensor_line("out", o, helper.np_dtype_to_tensor_dtype(o.dtype)) for o in outs]
    lines.append(f"case {name}_{count} {op} {opset} {len(at)} {len(il)} {len(ol)}")
    lines.extend(at + il + ol)
    count += 1


REDUCE = ["ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
          "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare"]
for op, opset, dt in itertools.product(REDUCE, [11, 13, 18],
                                       [np.float32, np.float16, np.float64, np.int32, np.int64,
                                        np.uint8, np.int8]):
    if op in ("ReduceLogSum", "ReduceLogSumExp") and dt not in (np.float32, np.float16, np.float64):
        continue  # log of integer sums: implementation-defined casts of NaN/-inf
    for _ in range(2):
        rank = int(rng.integers(1, 5))
        shape = tuple(int(rng.integers(1, 5)) for _ in range(rank))
        x = rand(shape, dt)
        if op in ("ReduceLogSum", "ReduceL2") and dt in (np.float32, np.float16, np.float64):
            x = np.abs(x) + np.array(0.5, dtype=dt)
        if op == "ReduceProd" and dt not in (np.float32, np.float16, np.float64):
            x = (x % 3).astype(dt)
        axes = sorted(set(int(a) for a in rng.integers(-rank, rank, int(rng.integers(0, rank + 1)))))
        keep = int(rng.integers(0, 2))
        axes_input = opset >= (13 if op == "ReduceSum" else 18)
        if axes_input:
            ins = [x, np.array(axes, dtype=np.int64)] if axes else [x]
            add(op.lower(), op, opset, ins, 1, keepdims=keep)
        else:
            kw = {"axes": axes} if axes else {}
            add(op.lower(), op, opset, [x], 1, keepdims=keep, **kw)

for op, opset, dt in itertools.product(["ArgMax", "ArgMin"], [11, 12, 13],
                                       [np.float32, np.float16, np.float64, np.int32, np.int64, np.uint8, np.int8]):
    rank = int(rng.integers(1, 4))
    shape = tuple(int(rng.integers(1, 5)) for _ in range(rank))
    x = (rand(shape, dt) % 4).astype(dt) if dt != np.float16 else rand(shape, dt)
    kw = {"select_last_index": int(rng.integers(0, 2))} if opset >= 12 else {}
    add(op.lower(), op, opset, [x], 1, axis=int(rng.integers(-rank, rank)),
        keepdims=int(rng.integers(0, 2)), **kw)

for dt, rev, exc in itertools.product([np.float32, np.float64, np.int32, np.int64, np.float16],
                                      [0, 1], [0, 1]):
    shape = (2, 3, 4)
    add("cumsum", "CumSum", 14, [rand(shape, dt), np.array(int(rng.integers(-3, 3)), dtype=np.int64)],
        1, reverse=rev, exclusive=exc)

for opset, dt, largest in itertools.product([10, 11], [np.float32, np.float64, np.int64, np.int32], [0, 1]):
    shape = (3, 5, 4)
    axis = int(rng.integers(-3, 3))
    k = int(rng.integers(0, shape[axis] + 1))
    x = rand(shape, dt)
    if opset == 10:
        add("topk", "TopK", 10, [x, np.array([k], dtype=np.int64)], 2, axis=axis)
    else:
        add("topk", "TopK", 11, [x, np.array([k], dtype=np.int64)], 2, axis=axis, largest=largest,
            sorted=1)

for dt in [np.float32, np.float64]:
    add("det", "Det", 11, [rand((3, 4, 4), dt)], 1)

for dt in [np.float32, np.float16, np.float64, np.int32, np.int64, np.int8, np.uint8]:
    add("shrink", "Shrink", 9, [rand((10,), dt)], 1, lambd=1.5, bias=0.5)

for axis, p in itertools.product([0, 1, -1], [1, 2]):
    add("lpnorm", "LpNormalization", 13, [rand((3, 4), np.float32)], 1, axis=axis, p=p)

# Resize / Upsample
COORD = ["half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric", "tf_half_pixel_for_nn",
         "tf_crop_and_resize", "half_pixel_symmetric"]
NEAREST = ["round_prefer_floor", "round_prefer_ceil", "floor", "ceil"]
for opset in [11, 13, 18, 19]:
    for mode, coord in itertools.product(["nearest", "linear", "cubic"], COORD):
        if coord == "half_pixel_symmetric" and opset < 19:
            continue
        if coord == "tf_half_pixel_for_nn" and mode != "nearest":
            continue
        for dt in [np.float32, np.uint8, np.int8]:
            if dt != np.float32 and mode != "nearest" and opset < 18:
                continue
            for use_sizes in [False, True]:
                x = rand((1, 2, 4, 5), dt)
                kw = {"mode": mode, "coordinate_transformation_mode": coord}
                if mode == "nearest":
                    kw["nearest_mode"] = NEAREST[int(rng.integers(0, 4))]
                if mode == "cubic":
                    kw["cubic_coeff_a"] = float(rng.choice([-0.75, -0.5]))
                    kw["exclude_outside"] = int(rng.integers(0, 2))
                if opset >= 18 and mode != "nearest":
                    kw["antialias"] = int(rng.integers(0, 2))
                roi = np.array([], dtype=np.float32)
                if coord == "tf_crop_and_resize":
                    roi = np.array([0, 0, 0.2, 0.1, 1, 1, 0.9, 1.2], dtype=np.float32)
                    kw["extrapolation_value"] = 7.0
                if use_sizes:
                    sizes = np.array([1, 2, int(rng.integers(1, 9)), int(rng.integers(1, 11))], dtype=np.int64)
                    ins = [x, roi, np.array([], dtype=np.float32) if opset < 13 else None, sizes]
                    if opset < 13:
                        ins[1] = roi
                    else:
                        ins[1] = roi if coord == "tf_crop_and_resize" else None
                else:
                    if coord == "tf_half_pixel_for_nn":
                        # onnxruntime only (the reference lacks it), computing in float32:
                        # keep to exactly representable scales
                        scales = np.array([1, 1, rng.choice([0.5, 1.5, 2.0]),
                                           rng.choice([0.5, 1.0, 2.5, 3.0])], dtype=np.float32)
                    else:
                        scales = np.array([1, 1, rng.choice([0.5, 0.6, 1.5, 2.0, 1.7]),
                                           rng.choice([0.4, 0.8, 1.0, 2.5, 3.0])], dtype=np.float32)
                    ins = [x, roi if (opset < 13 or coord == "tf_crop_and_resize") else None, scales]
                add(f"resize_{mode}_{coord}", "Resize", opset, ins, 1, **kw)
    if opset >= 18:
        for policy in ["not_larger", "not_smaller"]:
            x = rand((1, 1, 4, 6), np.float32)
            add("resize_keep", "Resize", opset, [x, None, None, np.array([5, 5], dtype=np.int64)], 1,
                mode="linear", axes=[2, 3], keep_aspect_ratio_policy=policy)

# (integer linear at opset 10 / Upsample: onnxruntime rounds in its own fixed-point way; not
# compared)
for opset, mode, dt in itertools.product([10], ["nearest", "linear"], [np.float32, np.uint8]):
    if mode == "linear" and dt != np.float32:
        continue
    for scales in ([1, 1, 2, 3], [1, 1, 0.5, 0.7], [1, 1, 1.5, 2.5]):
        add("resize10", "Resize", opset, [rand((1, 2, 4, 6), dt), np.array(scales, dtype=np.float32)], 1, mode=mode)
for mode, dt in [("nearest", np.float32), ("nearest", np.int32), ("linear", np.float32)]:
    add("upsample9", "Upsample", 9, [rand((1, 2, 3, 4), dt), np.array([1, 1, 2, 1.5], dtype=np.float32)], 1, mode=mode)

# NonMaxSuppression
for cpb, opset in itertools.product([0, 1], [10, 11]):
    for _ in range(3):
        nb, nc, nbox = 2, 3, 12
        xy = rng.uniform(0, 10, (nb, nbox, 2)).astype(np.float32)
        wh = rng.uniform(0.5, 4, (nb, nbox, 2)).astype(np.float32)
        if cpb:
            boxes = np.concatenate([xy, wh], axis=2)
        else:
            boxes = np.concatenate([xy, xy + wh], axis=2)[:, :, [1, 0, 3, 2]]
        scores = rng.choice([0.1, 0.3, 0.5, 0.7, 0.9], (nb, nc, nbox)).astype(np.float32)
        ins = [boxes, scores, np.array([int(rng.integers(0, 8))], dtype=np.int64),
               np.array([float(rng.choice([0.0, 0.3, 0.5]))], dtype=np.float32)]
        if rng.integers(0, 2):
            ins.append(np.array([0.2], dtype=np.float32))
        add("nms", "NonMaxSuppression", opset, ins, 1, center_point_box=cpb)

# RoiAlign
for opset, mode, sr in itertools.product([10, 16], ["avg", "max"], [0, 2]):
    for ct in (["half_pixel", "output_half_pixel"] if opset >= 16 else [None]):
        x = rand((2, 3, 10, 9), np.float32)
        rois = np.array([[0, 0, 9, 9], [0, 5, 4, 9], [5, 5, 9, 9], [1.3, 2.1, 6.6, 8.4], [-2, -1, 12, 11]],
                        dtype=np.float32)
        bi = np.array([0, 1, 0, 1, 0], dtype=np.int64)
        kw = {"coordinate_transformation_mode": ct} if ct else {}
        add("roialign", "RoiAlign", opset, [x, rois, bi], 1, mode=mode, output_height=3, output_width=4,
            sampling_ratio=sr, spatial_scale=float(rng.choice([1.0, 0.5])), **kw)

# MaxRoiPool
for scale in [1.0, 0.5]:
    x = rand((2, 3, 8, 7), np.float32)
    rois = np.array([[0, 0, 0, 6, 7], [1, 2, 1, 5, 6], [0, 3, 3, 3, 3], [1, -2, -1, 9, 10]], dtype=np.float32)
    add("maxroipool", "MaxRoiPool", 7, [x, rois], 1, pooled_shape=[3, 2], spatial_scale=scale)

# GridSample
for opset, mode, pad, align in itertools.product([16, 20], ["nearest", "linear", "cubic"],
                                                 ["zeros", "border", "reflection"], [0, 1]):
    m = mode if opset >= 20 else {"linear": "bilinear", "cubic": "bicubic"}.get(mode, mode)
    if m == "bicubic" and pad == "border":
        continue  # the reference lacks "bicubic"; onnxruntime clamps cubic taps differently
    x = rand((2, 2, 4, 5), np.float32)
    grid = rng.uniform(-1.3, 1.3, (2, 3, 6, 2)).astype(np.float32)
    add("gridsample", "GridSample", opset, [x, grid], 1, mode=m, padding_mode=pad, align_corners=align)
    if opset >= 20 and mode != "cubic":
        x = rand((1, 2, 3, 4, 5), np.float32)
        grid = rng.uniform(-1.3, 1.3, (1, 2, 3, 2, 3)).astype(np.float32)
        add("gridsample3d", "GridSample", opset, [x, grid], 1, mode=m, padding_mode=pad, align_corners=align)

# MaxUnpool (indices as MaxPool produces them)
for opset in [9, 11]:
    x = rand((1, 2, 4, 4), np.float32)
    vals = rand((1, 2, 2, 2), np.float32)
    idx = np.array([0, 3, 9, 14, 16 + 1, 16 + 6, 16 + 8, 16 + 15], dtype=np.int64).reshape(1, 2, 2, 2)
    add("maxunpool", "MaxUnpool", opset, [vals, idx], 1, kernel_shape=[2, 2], strides=[2, 2])
    if opset >= 11:
        add("maxunpool_os", "MaxUnpool", opset, [vals, idx, np.array([1, 2, 5, 5], dtype=np.int64)], 1,
            kernel_shape=[2, 2], strides=[2, 2])

path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reduce_ort_cases.txt")
with open(path, "w") as f:
    f.write("\n".join(lines) + "\nend\n")
print(f"wrote {count} cases ({skipped} skipped: onnxruntime lacks them) to {path}", file=sys.stderr)
