"""ge as an ONNX backend (onnx.backend.base.Backend), e.g. for
`onnx.backend.test.BackendTest(ge.onnx_backend, __name__)`.

prepare() serialises the model and loads it with ge_graph_load_buffer (models above protobuf's
2 GiB limit go through a temporary file with external data), then builds it, so every op,
dtype and shape problem surfaces at prepare.  BackendRep.run(inputs) returns the outputs in
graph output order.
"""

import os
import tempfile

import numpy as np
import onnx
from onnx.backend.base import Backend, BackendRep, Device, DeviceType, namedtupledict

from . import _lib as L
from .session import Graph, Session

__all__ = ["GeBackend", "GeBackendRep", "prepare", "run_model", "run_node", "supports_device"]


def _check_device(device):
    if not GeBackend.supports_device(device):
        raise L.Unsupported("ge.onnx_backend: device %r is not supported (only CPU)" % (device,),
                            L.GE_ERR_UNSUPPORTED)


def _load_model(model, base_dir):
    try:
        data = model.SerializeToString()
    except ValueError:  # above 2 GiB: write it out with its tensors as external data
        data = None
    if data is not None:
        return Graph.from_bytes(data, base_dir=base_dir, name=model.graph.name or "model")
    with tempfile.TemporaryDirectory(prefix="ge-onnx-") as tmp:
        path = os.path.join(tmp, "model.onnx")
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True,
                        location="model.onnx.data")
        return Graph.load(path)


class GeBackendRep(BackendRep):
    """A built model: run(inputs) -> outputs in graph output order."""

    _GRAPH_ID = 0

    def __init__(self, session, inputs, outputs):
        self._session = session
        self.inputs = inputs      # list of ge.ValueInfo
        self.outputs = outputs
        self._names = [o.name for o in outputs]

    def run(self, inputs, **kwargs):
        if isinstance(inputs, dict):
            missing = [v.name for v in self.inputs if v.name not in inputs]
            if missing:
                raise ValueError("ge.onnx_backend: missing input(s) %s" % ", ".join(missing))
            values = [inputs[v.name] for v in self.inputs]
        elif isinstance(inputs, (list, tuple)):
            values = list(inputs)
        else:
            values = [inputs]
        if len(values) != len(self.inputs):
            raise ValueError("ge.onnx_backend: the model takes %d input(s) (%s), got %d"
                             % (len(self.inputs), ", ".join(v.name for v in self.inputs),
                                len(values)))
        values = [v if isinstance(v, (np.ndarray, list, tuple)) or v is None else np.asarray(v)
                  for v in values]
        outs = self._session.run_graph(self._GRAPH_ID, values)
        try:
            return namedtupledict("Outputs", self._names)(*outs)
        except ValueError:  # names that are not Python identifiers
            return tuple(outs)


class GeBackend(Backend):
    """ge as an onnx.backend.base.Backend (CPU only)."""

    @classmethod
    def is_compatible(cls, model, device="CPU", **kwargs):
        return cls.supports_device(device)

    @classmethod
    def prepare(cls, model, device="CPU", **kwargs):
        """kwargs: base_dir (external data folder), options (session options dict),
        threads, precision (as ge.InferenceSession)."""
        _check_device(device)
        if isinstance(model, (bytes, bytearray)):
            model = onnx.load_model_from_string(bytes(model))
        if not isinstance(model, onnx.ModelProto):
            raise TypeError("ge.onnx_backend.prepare: expected an onnx.ModelProto, got %s"
                            % type(model).__name__)
        from .session import PRECISION_MODES
        opts = dict(kwargs.get("options") or {})
        if kwargs.get("threads") is not None:
            opts["ge.intraOpThreads"] = str(int(kwargs["threads"]))
        mode = PRECISION_MODES.get(kwargs.get("precision"))
        if mode:
            opts["ge.exec.precision_mode"] = mode
        graph = _load_model(model, kwargs.get("base_dir"))
        try:
            inputs, outputs = graph.inputs, graph.outputs
            session = Session(opts)
            session.add_graph(GeBackendRep._GRAPH_ID, graph)
        finally:
            graph.free()
        session.build_graph(GeBackendRep._GRAPH_ID)
        return GeBackendRep(session, inputs, outputs)

    @classmethod
    def run_model(cls, model, inputs, device="CPU", **kwargs):
        return cls.prepare(model, device, **kwargs).run(inputs)

    @classmethod
    def run_node(cls, node, inputs, device="CPU", outputs_info=None, **kwargs):
        """Runs one NodeProto on `inputs` (a list in node input order, or a dict by name)."""
        _check_device(device)
        if isinstance(inputs, dict):
            feed = [inputs[n] for n in node.input if n]
        else:
            feed = [np.asarray(x) for x in inputs]
        names = [n for n in node.input if n]
        if len(feed) != len(names):
            raise ValueError("ge.onnx_backend.run_node: node %r has %d inputs, got %d"
                             % (node.name or node.op_type, len(names), len(feed)))
        g_inputs = []
        for n, x in zip(names, feed):
            x = np.asarray(x)
            elem = onnx.helper.np_dtype_to_tensor_dtype(x.dtype)
            g_inputs.append(onnx.helper.make_tensor_value_info(n, elem, x.shape))
        g_outputs = []
        for k, n in enumerate(node.output):
            if not n:
                continue
            if outputs_info and k < len(outputs_info):
                dt, shape = outputs_info[k]
                g_outputs.append(onnx.helper.make_tensor_value_info(
                    n, onnx.helper.np_dtype_to_tensor_dtype(np.dtype(dt)), shape))
            else:
                g_outputs.append(onnx.helper.make_empty_tensor_value_info(n))
        graph = onnx.helper.make_graph([node], "run_node", g_inputs, g_outputs)
        opset = kwargs.pop("opset_version", None) or onnx.defs.onnx_opset_version()
        domain = node.domain or ""
        opsets = [onnx.helper.make_opsetid("", opset)]
        if domain not in ("", "ai.onnx"):
            opsets.append(onnx.helper.make_opsetid(domain, 1))
        model = onnx.helper.make_model(graph, opset_imports=opsets)
        return cls.prepare(model, device, **kwargs).run(feed)

    @classmethod
    def supports_device(cls, device):
        try:
            return Device(device).type == DeviceType.CPU
        except Exception:  # noqa: BLE001 - unknown device strings
            return False


# module-level functions, as onnx backends usually offer
prepare = GeBackend.prepare
run_model = GeBackend.run_model
run_node = GeBackend.run_node
supports_device = GeBackend.supports_device
