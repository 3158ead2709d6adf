"""Intermediate tensors for a correctness check with signal (docs/measurement.md, "Outputs that
carry no signal").

A model whose outputs are empty, all zero or constant (torchvision's ViTs with their zero-init
head and random weights; a detector that keeps no box) gives a comparison that compares nothing.
Then the export also saves the input of the last layer the model ran whose input varies, captured
from PyTorch, named by the ONNX tensor that holds the same value: torch.onnx names every node by
the module it comes from (`/heads/head/Gemm`; a module's second call `/layer1/relu_1/Relu`), so
the tensor is the first input of the module's last call that comes from outside it; the dynamo
exporter records the module paths of each node in its metadata instead. The core adds
that tensor to a copy of the graph as an extra output, for the check only, and compares.
"""

import ast
import collections
import os
import re

import torch

from . import inputs

# Leaf calls remembered from the end of the forward: candidates, newest first. At least _WINDOW
# calls, enough to look past a detector's heads (one call per feature map) to the layers before
# them; more while their copies fit in _WINDOW_BYTES, to look past the last stages of a
# randomly initialised MobileViT, whose values shrink to subnormal numbers over its last 60 calls.
_WINDOW = 32
_WINDOW_BYTES = 64 << 20


# Types whose subnormal numbers the core's comparison reads as zero (compare_internal.h).
_FLUSHED = (torch.float32, torch.bfloat16, torch.float64)


def has_signal(tensors):
    """True when some tensor has elements that are not all the same finite value, subnormal
    numbers read as zero as the core's comparison reads them."""
    for t in tensors:
        if not isinstance(t, torch.Tensor) or t.numel() == 0:
            continue
        values = t.detach()
        if values.is_floating_point() or values.is_complex():
            values = values[torch.isfinite(values)] if not values.is_complex() else values
            if values.numel() == 0:
                continue
            if values.dtype in _FLUSHED:
                tiny = torch.finfo(values.dtype).tiny
                values = torch.where(values.abs() < tiny, torch.zeros_like(values), values)
        flat = values.reshape(-1)
        if bool((flat != flat[0]).any()):
            return True
    return False


def _clear_of_subnormals(t):
    """True unless `t` is a float tensor whose largest finite magnitude is so small that reading
    its subnormal elements as zero (as the core's comparison does) moves them by more than one
    unit in the last place of it: a randomly initialised MobileViT's last layers run at ~1e-37."""
    if not t.is_floating_point() or t.dtype not in _FLUSHED:
        return True
    finite = t[torch.isfinite(t)]
    info = torch.finfo(t.dtype)
    return finite.numel() > 0 and float(finite.abs().max()) >= info.tiny / info.eps


def _leaf_inputs(module, args, kwargs):
    """(path, first input tensor) of the last leaf-module calls of one forward (see _WINDOW),
    oldest first, each input copied when the call began (an in-place ReLU overwrites its
    input)."""
    names = {id(m): name for name, m in module.named_modules() if name}
    window = collections.deque()
    kept_bytes = [0]
    handles = []

    def pre_hook(sub, call_args):
        tensors = inputs.tensors_of(call_args)
        if not tensors:
            return
        copy = tensors[0].detach().clone()
        window.append((names[id(sub)], copy))
        kept_bytes[0] += copy.numel() * copy.element_size()
        while len(window) > _WINDOW and kept_bytes[0] > _WINDOW_BYTES:
            _, dropped = window.popleft()
            kept_bytes[0] -= dropped.numel() * dropped.element_size()

    for sub in module.modules():
        if sub is not module and id(sub) in names and not any(True for _ in sub.children()):
            handles.append(sub.register_forward_pre_hook(pre_hook))
    try:
        with torch.no_grad():
            module(*args, **kwargs)
    finally:
        for h in handles:
            h.remove()
    return list(window)


def _scope_segments(path):
    """The scope names torch.onnx gives module `path` and its ancestors: each one's unqualified
    name, its last non-numeric atom with the numeric atoms after it (`layer4.1.conv2` ->
    layer4, layer4.1, conv2; `head.module_list.5.0` -> head, module_list, module_list.5,
    module_list.5.0), as torch.onnx.utils._unqualified_variable_name makes them."""
    atoms = path.split(".")
    segments = []
    for end in range(1, len(atoms) + 1):
        start = end - 1
        while start > 0 and atoms[start].isnumeric():
            start -= 1
        segments.append(".".join(atoms[start:end]))
    return segments


def _live_values(graph):
    """The values some graph output depends on. A value that feeds no output is dead in the
    graph the benchmark runs (ONNX Runtime drops it): comparing it would check computation the
    benchmark never does (a detector whose trace saw no box exports its outputs as constants)."""
    made_by = {o: n for n in graph.node for o in n.output}
    live, todo = set(), [o.name for o in graph.output]
    while todo:
        name = todo.pop()
        if name in live:
            continue
        live.add(name)
        node = made_by.get(name)
        if node is not None:
            todo.extend(i for i in node.input if i)
    return live


_NAME_SCOPES = "pkg.torch.onnx.name_scopes"


def _dynamo_calls(graph, path):
    """The nodes of module `path`'s last call in a graph the dynamo exporter wrote: each node
    carries the module paths it was made in (metadata `pkg.torch.onnx.name_scopes`, e.g.
    ['', 'body', 'body.0', 'linear'], the last entry the op); a call is a run of consecutive
    such nodes. None when the graph has no such metadata."""
    found, runs = False, []
    for index, node in enumerate(graph.node):
        # NodeProto.metadata_props is new in onnx 1.16 (Debian 12 has 1.12).
        scopes = next((p.value for p in getattr(node, "metadata_props", ())
                       if p.key == _NAME_SCOPES), None)
        if scopes is None:
            continue
        found = True
        try:
            inside = path in ast.literal_eval(scopes)[1:-1]
        except (ValueError, SyntaxError):
            continue
        if inside:
            if runs and runs[-1][0] == index - 1:
                runs[-1][0] = index
                runs[-1][1].append(node)
            else:
                runs.append([index, [node]])
    if not found:
        return None
    return {str(n): run for n, run in enumerate(runs)}


def _torchscript_calls(graph, path):
    """The nodes of each call of module `path` in a graph the TorchScript exporter wrote, by
    the scope it names nodes with (`/heads/head/Gemm`; a second call `/relu_1/Relu`)."""
    segments = "".join("/%s(?:_\\d+)?" % re.escape(s) for s in _scope_segments(path))
    scope = re.compile("^(%s)/" % segments)
    calls = {}  # the matched scope text -> [index of its last node, its nodes in graph order]
    for index, node in enumerate(graph.node):
        match = scope.match(node.name)
        if match:
            call = calls.setdefault(match.group(1), [index, []])
            call[0] = index
            call[1].append(node)
    return calls


def _graph_shapes(graph):
    """{value name: its static shape} for the values the graph's value_info gives in full."""
    shapes = {}
    for info in graph.value_info:
        dims = info.type.tensor_type.shape.dim
        if info.type.HasField("tensor_type") and all(d.HasField("dim_value") for d in dims):
            shapes[info.name] = [d.dim_value for d in dims]
    return shapes


def _scope_tensor(graph, path, live=None, shape=None, shapes=None):
    """The ONNX tensor holding the input of the last call of module `path`: the first input of
    that call's nodes that neither an initializer, a Constant nor another node of the call
    makes, and that is not a graph input. None when there is no such value, when it feeds no
    graph output (`live`), or when the graph gives it a shape other than `shape`: a rewrite
    that fused the call into the node before it (onnxscript's FuseBatchNormIntoConv gives the
    Conv the BatchNorm's scope) leaves the call's input nowhere in the graph."""
    calls = _dynamo_calls(graph, path)
    if calls is None:
        calls = _torchscript_calls(graph, path)
    if not calls:
        return None
    last = max(calls.values(), key=lambda call: call[0])[1]
    # A graph input would compare the input with itself: no computation checked.
    initializers = {t.name for t in graph.initializer} | {i.name for i in graph.input}
    constants = {o for n in graph.node if n.op_type == "Constant" for o in n.output}
    made_inside = {o for n in last for o in n.output}
    for node in last:
        for name in node.input:
            if name and name not in initializers and name not in constants \
                    and name not in made_inside:
                if live is not None and name not in live:
                    return None
                known = (shapes or {}).get(name)
                return None if shape is not None and known not in (None, shape) else name
    return None


def capture(module, fresh, graph, io_dir, save_tensor):
    """Saves io_dir/intermediate_0.pb for the newest leaf call whose input varies and whose
    tensor the graph names; returns [{module, tensor, path}] (empty when none qualifies)."""
    args, kwargs = fresh()
    live, shapes = _live_values(graph), _graph_shapes(graph)
    for path, value in reversed(_leaf_inputs(module, args, kwargs)):
        if not has_signal([value]) or not _clear_of_subnormals(value):
            continue
        tensor = _scope_tensor(graph, path, live, list(value.shape), shapes)
        if tensor is None:
            continue
        pb = os.path.join(io_dir, "intermediate_0.pb")
        save_tensor(pb, tensor, value)
        return [{"module": path, "tensor": tensor, "path": pb,
                 "shape": list(value.shape), "dtype": str(value.dtype).replace("torch.", "")}]
    return []
