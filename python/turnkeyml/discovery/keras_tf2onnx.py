"""The tf2onnx conversion of a traced Keras call (keras_build.export), in bounded memory.

tf2onnx 1.17 as it comes needs ~75 times a model's weights in memory: InceptionV3 (96 MB of
weights) peaked at 7.3 GB, so every model over ~25 M parameters failed under the corpus's 8 GB.
Three causes, each removed here (measured on InceptionV3, peak RSS of the whole process, 0.8 GB of
it the model and TensorFlow):
- Its optimizer loop runs each of its 12 graph optimizers on a deep copy of the graph, and the
  copy it replaces is reference-cycle garbage that Python's collector, counting objects, not
  bytes, leaves in place: a collection before each optimizer (7.3 -> 2.7 GB).
- Each optimizer's `Node.update_proto` empties and refills a NodeProto's attributes; with
  protobuf's upb backend the removed attributes (a Const node's weights) stay in the message's
  arena until the message dies, so every pass kept one more copy of the weights: a fresh
  NodeProto per update (each pass ~93 MB more before).
- The freezing for graphs under 2 GB (`large_model=False`) round-trips the weights through several
  GraphDefs and grappler (2.7 GB peak for 96 MB); `large_model=True` freezes without grappler and
  keeps the weights out of the GraphDefs (1.35 GB peak in all). It also passes protobuf's 2 GB
  limit. tf2onnx's own optimizers fold batch norms into the convolutions either way (InceptionV3:
  221 nodes against grappler's 217, the same 94 Conv).
The weights come back from tf2onnx's external tensor storage: into the file when they are at most
1 GiB, as the PyTorch path writes one self-contained file; above, into one external data file
named after the model (`<model>.onnx.data`), as the dynamo exporter writes them.
"""

import contextlib
import gc
import os

import numpy as np
import tensorflow as tf

from . import export as torch_export

# Above this many bytes of weights: an external data file (export._EXTERNAL_DATA_BYTES's rule).
EXTERNAL_DATA_BYTES = torch_export._EXTERNAL_DATA_BYTES


@contextlib.contextmanager
def _convolutions_without_xla():
    """Keras's TensorFlow backend runs grouped convolutions (ConvNeXt's depthwise layers) in an
    XLA-compiled tf.function, a CPU workaround for eager execution; tf2onnx cannot look inside
    such a call (StatefulPartitionedCall). While the export traces the model, they are the plain
    Conv2D op, which tf2onnx converts to an ONNX Conv with groups."""
    from keras.src import backend
    from keras.src.backend.tensorflow import nn

    original = nn.conv

    def conv(inputs, kernel, strides=1, padding="valid", data_format=None, dilation_rate=1):
        data_format = backend.standardize_data_format(data_format)
        return tf.nn.convolution(inputs, kernel, strides, padding.upper(),
                                 data_format=nn._convert_data_format(data_format,
                                                                     len(inputs.shape)),
                                 dilations=dilation_rate)

    nn.conv = conv
    try:
        yield
    finally:
        nn.conv = original


def _erfc(ctx, node, name, args):
    """Erfc (exact GELU: 0.5 * x * erfc(-x / sqrt 2)), which tf2onnx 1.17 lacks: 1 - Erf(x)."""
    from tf2onnx import utils

    node.type = "Erf"
    dtype = utils.map_onnx_to_numpy_type(ctx.get_dtype(node.input[0]))
    one = ctx.make_const(utils.make_name("erfc_one"), np.array(1, dtype=dtype))
    sub = ctx.insert_new_node_on_output("Sub", node.output[0], name=utils.make_name(node.name))
    ctx.replace_inputs(sub, [one.output[0], node.output[0]])
    return node


_OP_HANDLERS = {"Erfc": (_erfc, [])}


def _patch_tf2onnx():
    """Keras's own ONNX export patches tf2onnx 1.17 for NumPy 2 (np.object, its constant folding):
    the same patch, where this Keras has it."""
    try:
        from keras.src.export.tf2onnx_lib import patch_tf2onnx
    except ImportError:
        return
    patch_tf2onnx()


@contextlib.contextmanager
def _bounded_memory():
    """tf2onnx's optimizers with a garbage collection before each, and NodeProtos made afresh by
    each update (the module's docstring), for the conversion only."""
    from tf2onnx import graph, optimizer

    onnx = torch_export.load_onnx()
    factories = optimizer._get_optimizers()
    update = graph.Node.update_proto

    def collected(factory):
        def make():
            gc.collect()
            return factory()
        return make

    def fresh_update(node, external_tensor_storage=None):
        old = node._op
        node._op = onnx.NodeProto(name=old.name, op_type=old.op_type, domain=old.domain,
                                  doc_string=old.doc_string)
        update(node, external_tensor_storage)

    wrapped = {name: collected(factory) for name, factory in factories.items()}
    optimizer._get_optimizers = lambda: wrapped
    graph.Node.update_proto = fresh_update
    try:
        yield
    finally:
        optimizer._get_optimizers = lambda: factories
        graph.Node.update_proto = update
        gc.collect()


def captured_constants(function, specs):
    """{placeholder name: value} of the tensors (not variables) the traced call captured:
    Keras 3 layers keep some constants as tensors (Normalization's mean and variance in
    EfficientNet). tf2onnx freezes captured variables but makes such a capture a graph input."""
    concrete = function.get_concrete_function(*specs)
    return {placeholder.name: value.numpy()
            for placeholder, value in zip(concrete.graph.internal_captures,
                                          concrete.captured_inputs)
            if value.dtype != tf.resource}


def _fold_captured_inputs(model, captured):
    """Turns graph inputs that are captured constants into initializers; returns their names."""
    numpy_helper = torch_export.load_onnx().numpy_helper
    folded = []
    for graph_input in list(model.graph.input):
        if graph_input.name in captured:
            model.graph.initializer.append(
                numpy_helper.from_array(np.asarray(captured[graph_input.name]), graph_input.name))
            model.graph.input.remove(graph_input)
            folded.append(graph_input.name)
    return folded


def _external_tensors(graph, onnx):
    """The TensorProtos of `graph` (initializers, Constant nodes' values, subgraphs) whose data
    tf2onnx left in its external tensor storage."""
    found = [t for t in graph.initializer if t.data_location == onnx.TensorProto.EXTERNAL]
    for node in graph.node:
        for attribute in node.attribute:
            if attribute.type == onnx.AttributeProto.TENSOR:
                if attribute.t.data_location == onnx.TensorProto.EXTERNAL:
                    found.append(attribute.t)
            for sub in list(attribute.graphs) + ([attribute.g] if attribute.HasField("g") else []):
                found.extend(_external_tensors(sub, onnx))
    return found


def _location(tensor):
    return next(e.value for e in tensor.external_data if e.key == "location")


def attach_weights(model, storage, path, external_bytes=EXTERNAL_DATA_BYTES):
    """Puts the weights tf2onnx kept in `storage` back: into the model when they total at most
    `external_bytes`, else into one file beside `path`, `<basename>.data` (what is written
    there now); returns that file's name or None."""
    onnx = torch_export.load_onnx()
    tensors = _external_tensors(model.graph, onnx)
    data = storage.name_to_tensor_data if storage is not None else {}
    total = sum(len(data[_location(t)]) for t in tensors)
    if total <= external_bytes:
        for tensor in tensors:
            raw = data[_location(tensor)]
            del tensor.external_data[:]
            tensor.data_location = onnx.TensorProto.DEFAULT
            tensor.raw_data = raw
        return None
    name = os.path.basename(path) + ".data"
    with open(os.path.join(os.path.dirname(path), name), "wb") as f:
        for tensor in tensors:
            raw = data[_location(tensor)]
            offset = f.tell()
            f.write(raw)
            del tensor.external_data[:]
            for key, value in (("location", name), ("offset", str(offset)),
                               ("length", str(len(raw)))):
                entry = tensor.external_data.add()
                entry.key, entry.value = key, value
    return name


def convert(function, specs, opset, path, log, external_bytes=EXTERNAL_DATA_BYTES):
    """Converts the traced call to ONNX, writing `path` (and its data file when the weights need
    one) with the captured constants as initializers; returns the ModelProto (its weights
    included unless external)."""
    import tf2onnx

    with _convolutions_without_xla():
        captured = captured_constants(function, specs)
    _patch_tf2onnx()
    with _bounded_memory():
        model, storage = tf2onnx.convert.from_function(
            function, input_signature=specs, opset=opset, custom_op_handlers=_OP_HANDLERS,
            large_model=True)
    folded = _fold_captured_inputs(model, captured)
    if folded:
        log.append("captured tensors made initializers: %s" % ", ".join(folded))
    data_file = attach_weights(model, storage, path, external_bytes)
    storage = None
    if data_file:
        log.append("weights over %d bytes: written to %s" % (external_bytes, data_file))
    torch_export._write_atomic(path, model.SerializeToString())
    return model
