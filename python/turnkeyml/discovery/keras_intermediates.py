"""Intermediate tensors of a Keras model for a correctness check with signal: intermediates.py's
counterpart for graphs tf2onnx wrote (docs/measurement.md, "Outputs that carry no signal").

With random weights a classifier's softmax is constant (the MobileNets: every class 0.001), so
comparing outputs compares nothing. As for PyTorch, the check then also compares the input of the
last layer call whose input varies with the ONNX tensor that holds the same value. tf2onnx keeps
TensorFlow's tensor names (`mobilenetv2_1.00_224_1/global_average_pooling2d_1/Mean:0`) on the
nodes that compute them, and the symbolic tensor a layer received in the trace that tf2onnx
converted carries that name. A name is not enough: tf2onnx's transpose optimizer computes
channels-last tensors channels-first under their own names ([1, 960, 7, 7] for Keras's
(1, 7, 7, 960)), and a pooling may keep unit axes that a later Squeeze drops ([1, 1280, 1, 1] for
(1, 1280)). So the graph's inferred shape decides: Keras's value is saved as is when the shapes
are equal, channels-first (axes 0, r-1, 1..r-2: the only permutation tf2onnx makes) when that
matches, and in either case reshaped when only unit axes differ, which keeps the element order;
a shape that matches none, or two ways that differ, is skipped. The graph benchmarked is the
user's model as converted: the core adds the tensor as an output of a copy, for the check only.
"""

import contextlib
import os

import numpy as np

from . import intermediates
from . import keras_model as km


def has_signal(arrays):
    """True when some array has finite elements that are not all the same value, subnormal
    float32 and float64 numbers read as zero as the core's comparison reads them."""
    for array in arrays:
        values = np.asarray(array)
        if values.size == 0:
            continue
        if values.dtype.kind in "fc":
            values = values[np.isfinite(values)]
            if values.size == 0:
                continue
            if values.dtype in (np.float32, np.float64):
                values = np.where(np.abs(values) < np.finfo(values.dtype).tiny, 0, values)
        flat = values.reshape(-1)
        if bool((flat != flat[0]).any()):
            return True
    return False


@contextlib.contextmanager
def layer_inputs(model, record):
    """While active, appends (layer name, first tensor argument) of every call of a layer other
    than `model` to `record`: values in an eager call, symbolic tensors in a trace."""
    import keras

    layer_class = keras.layers.Layer
    original = layer_class.__call__

    def call(layer, *args, **kwargs):
        if layer is not model:
            tensors = km.tensors_of((args, kwargs))
            if tensors:
                record.append((layer.name, tensors[0]))
        return original(layer, *args, **kwargs)

    layer_class.__call__ = call
    try:
        yield record
    finally:
        layer_class.__call__ = original


def _unit_free(shape):
    return [d for d in shape if d != 1]


def _as_graph_holds(value, graph_shape):
    """Keras's `value` laid out as the graph's tensor of `graph_shape` holds it, or None."""
    if graph_shape is None or any(d is None for d in graph_shape):
        return None
    if int(np.prod(graph_shape, dtype=np.int64)) != value.size:
        return None
    layouts = [value]
    if value.ndim >= 3:
        layouts.append(np.transpose(value, [0, value.ndim - 1] + list(range(1, value.ndim - 1))))
    fits = [a for a in layouts if _unit_free(a.shape) == _unit_free(graph_shape)]
    if not fits or any(not np.array_equal(f.reshape(-1), fits[0].reshape(-1)) for f in fits[1:]):
        return None  # none fits, or two layouts fit with different element orders
    return np.ascontiguousarray(fits[0]).reshape(graph_shape)


def _graph_shapes(model):
    """{tensor name: [dims, None where unknown]} of `model` by ONNX shape inference."""
    from . import export

    inferred = export.load_onnx().shape_inference.infer_shapes(model)
    graph = inferred.graph
    shapes = {}
    for value in list(graph.value_info) + list(graph.output):
        dims = value.type.tensor_type.shape.dim
        shapes[value.name] = [d.dim_value if d.HasField("dim_value") else None for d in dims]
    return shapes


def capture(model, eager_inputs, traced_inputs, io_dir, save_array):
    """Saves io_dir/intermediate_0.pb for the newest layer call whose input varies and whose
    tensor the graph holds in a layout it can be compared in; returns [{module, tensor, path,
    shape, dtype}] (empty when none qualifies). `eager_inputs` and `traced_inputs`: the
    layer_inputs records of an eager call and of the converted trace, call for call."""
    if len(eager_inputs) != len(traced_inputs):
        raise ValueError("the eager call made %d layer calls, the trace %d"
                         % (len(eager_inputs), len(traced_inputs)))
    made = {o for node in model.graph.node for o in node.output}
    live = intermediates._live_values(model.graph)
    shapes = None
    for (layer, value), (traced_layer, symbolic) in reversed(list(zip(eager_inputs,
                                                                     traced_inputs))):
        name = getattr(symbolic, "name", None)
        if layer != traced_layer or name not in made or name not in live:
            continue
        array = km.to_numpy(value)
        if not has_signal([array]):
            continue
        if shapes is None:
            shapes = _graph_shapes(model)
        laid_out = _as_graph_holds(array, shapes.get(name))
        if laid_out is None:
            continue
        path = os.path.join(io_dir, "intermediate_0.pb")
        save_array(path, name, laid_out)
        return [{"module": layer, "tensor": name, "path": path,
                 "shape": list(laid_out.shape), "dtype": str(laid_out.dtype)}]
    return []
