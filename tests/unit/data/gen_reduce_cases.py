"""Writes reduce_node_cases.txt: the single-node cases of onnx's backend node tests for the ops
of the reduce family (inputs and the reference outputs), read by tests/unit/test_ops_reduce.c.

Run from the repository root with the venv:  .venv/bin/python tests/unit/data/gen_reduce_cases.py
"""
import os
import sys

import numpy as np
import onnx
from onnx import helper, numpy_helper
from onnx.backend.test.case.node import collect_testcases

OPS = {"ReduceSum", "ReduceMean", "ReduceMax", "ReduceMin", "ReduceProd", "ReduceL1", "ReduceL2",
       "ReduceLogSum", "ReduceLogSumExp", "ReduceSumSquare", "ArgMax", "ArgMin", "CumSum", "TopK",
       "Det", "Unique", "Shrink", "LpNormalization", "Resize", "Upsample",
       "NonMaxSuppression", "RoiAlign", "MaxRoiPool", "GridSample", "MaxUnpool"}
DT = {np.float32: "float32", np.float16: "float16", np.float64: "float64", np.int8: "int8",
      np.int16: "int16", np.int32: "int32", np.int64: "int64", np.uint8: "uint8",
      np.uint16: "uint16", np.uint32: "uint32", np.uint64: "uint64", np.bool_: "bool"}


def dtype_name(a, elem_type):
    if elem_type == onnx.TensorProto.BFLOAT16:
        return "bfloat16"
    return DT.get(np.dtype(a.dtype).type) or {np.dtype(k): v for k, v in DT.items()}.get(np.dtype(a.dtype))


def fmt_vals(a, name):
    flat = a.reshape(-1)
    if name in ("float32", "float16", "float64", "bfloat16"):
        return " ".join(repr(float(v)) for v in flat.astype(np.float64))
    if name == "bool":
        return " ".join(str(int(v)) for v in flat)
    return " ".join(str(int(v)) for v in flat)


def tensor_line(kind, a, elem_type):
    if a is None:
        return f"{kind} none"
    a = np.asarray(a)
    if elem_type == onnx.TensorProto.BFLOAT16 and a.dtype != np.float32:
        a = a.astype(np.float32)
    name = dtype_name(a, elem_type)
    if name is None:
        return None
    return f"{kind} {name} {a.ndim} {' '.join(str(d) for d in a.shape)} {fmt_vals(a, name)}".rstrip()


def attr_line(at):
    v = helper.get_attribute_value(at)
    if at.type == onnx.AttributeProto.INT:
        return f"attr {at.name} i {v}"
    if at.type == onnx.AttributeProto.FLOAT:
        return f"attr {at.name} f {repr(float(v))}"
    if at.type == onnx.AttributeProto.STRING:
        return f"attr {at.name} s {v.decode()}"
    if at.type == onnx.AttributeProto.INTS:
        return f"attr {at.name} ints {len(v)} {' '.join(str(x) for x in v)}".rstrip()
    if at.type == onnx.AttributeProto.FLOATS:
        return f"attr {at.name} floats {len(v)} {' '.join(repr(float(x)) for x in v)}".rstrip()
    return None


def main():
    out = []
    for case in collect_testcases(None):
        m = case.model
        if m is None or len(m.graph.node) != 1:
            continue
        node = m.graph.node[0]
        if node.op_type not in OPS or node.domain not in ("", "ai.onnx"):
            continue
        opset = next(o.version for o in m.opset_import if o.domain in ("", "ai.onnx"))
        for ds_i, (ins, outs) in enumerate(case.data_sets):
            lines = []
            ok = True
            attrs = [attr_line(a) for a in node.attribute]
            if any(a is None for a in attrs):
                continue
            # graph inputs bind node inputs by name
            gin = {vi.name: (i, vi.type.tensor_type.elem_type) for i, vi in enumerate(m.graph.input)}
            in_lines = []
            for name in node.input:
                if name == "":
                    in_lines.append("in none")
                    continue
                i, et = gin[name]
                ln = tensor_line("in", ins[i], et)
                if ln is None:
                    ok = False
                    break
                in_lines.append(ln)
            out_lines = []
            for i, name in enumerate(node.output):
                et = m.graph.output[i].type.tensor_type.elem_type
                ln = tensor_line("out", outs[i], et) if i < len(outs) else "out none"
                if ln is None:
                    ok = False
                    break
                out_lines.append(ln)
            if not ok:
                continue
            lines.append(f"case {case.name}_{ds_i} {node.op_type} {opset} {len(attrs)} "
                         f"{len(in_lines)} {len(out_lines)}")
            lines += attrs + in_lines + out_lines
            out += lines
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "reduce_node_cases.txt")
    with open(path, "w") as f:
        f.write("\n".join(out) + "\nend\n")
    print(f"wrote {sum(1 for l in out if l.startswith('case '))} cases to {path}", file=sys.stderr)


if __name__ == "__main__":
    main()
