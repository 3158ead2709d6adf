"""Symbolic functions that torch.onnx.export lacks, or gets wrong, in the PyTorch and torchvision
releases turnkey runs with (Debian 12: torch 1.13, torchvision 0.14; PyPI: torch 2.15).

Most fixes are TorchScript exporter symbolics, which the dynamo exporter (torch.export) never
calls; for it, turnkey gives translations of ops torch.onnx cannot translate (translations.py,
which records its use here as well). A fix of kind "adds" is registered only where the
installed exporter has no symbolic of its own for that op and opset, so a newer torch or
torchvision keeps its own; a fix of kind "wraps" is registered over the exporter's own, which
it calls with corrected arguments. A fix records when the exporter calls
it, and the export reply names the fixes a graph used (`exporter_fixes`), so a user can see that
an ONNX file holds nodes turnkey wrote rather than the exporter.
"""

import sys

import torch

_applied = {}  # (op name, opset it is registered at) -> fix name
_used = set()  # fix names called since the last reset()


def _registration():
    """The TorchScript exporter's symbolic registry: torch.onnx._internal.registration up to
    torch 2.8, torch.onnx._internal.torchscript_exporter.registration since (pytorch PR
    #161323). None where neither exists."""
    import importlib
    for name in ("torch.onnx._internal.torchscript_exporter.registration",
                 "torch.onnx._internal.registration"):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


def _exporter_module(name):
    """A module of the TorchScript exporter (symbolic_helper, _type_utils, symbolic_opset11):
    torch.onnx.<name> up to torch 2.8, torch.onnx._internal.torchscript_exporter.<name> since
    (where torch.onnx keeps only some of them)."""
    import importlib
    for prefix in ("torch.onnx._internal.torchscript_exporter.", "torch.onnx."):
        try:
            return importlib.import_module(prefix + name)
        except ImportError:
            continue
    raise ImportError("the TorchScript exporter's %s is in neither torch.onnx nor "
                      "torch.onnx._internal.torchscript_exporter" % name)


def _has_own_symbolic(op, first, opset):
    """Whether the installed exporter (or a library such as torchvision, whose symbolics are
    custom ones) registered a symbolic for `op` at an opset from `first` to `opset`. Read from the
    registered versions, not from what it dispatches to: below opset 9 the registry dispatches
    upward (asked for opset 8 it gives torch 2's opset-9 `aten::zero`), so comparing dispatches
    missed symbolics registered at opset 9. Raises LookupError where the registry is unknown,
    so the fix is reported as not applied rather than as not needed."""
    registration = _registration()
    if registration is None:
        raise LookupError("this torch has no symbolic registry turnkey knows "
                          "(torch.onnx._internal[.torchscript_exporter].registration)")
    # torch 2.9+ imports the exporter's symbolic modules (which fill the registry) only when a
    # TorchScript export begins: before that, every op looked as if it had no symbolic.
    for version in range(7, opset + 1):
        try:
            _exporter_module("symbolic_opset%d" % version)
        except ImportError:
            continue
    group = registration.registry.get_function_group(op)
    if group is None:
        return False
    functions = getattr(group, "_functions", None)
    if not hasattr(functions, "__contains__"):
        raise LookupError("this torch's symbolic registry keeps its versions in a form turnkey "
                          "does not know")
    return any(version in functions for version in range(first, opset + 1))


def _roi_align(g, input, rois, spatial_scale, pooled_height, pooled_width, sampling_ratio,
               aligned):
    """torchvision::roi_align at opset >= 16, where RoiAlign has coordinate_transformation_mode.

    torchvision 0.14 registers its symbolic for opset 11 only and writes no mode; at opset 16
    and later the ONNX default mode is half_pixel, which is aligned=True. torchvision's R-CNN
    heads use aligned=False (output_half_pixel), so exporting them at opset 17 with torchvision's
    symbolic samples every region half a pixel off.
    """
    helper = _exporter_module("symbolic_helper")
    select = _exporter_module("symbolic_opset11").select
    squeeze = _exporter_module("symbolic_opset11").squeeze

    _used.add("roi_align_opset16")
    spatial_scale = helper._get_const(spatial_scale, "f", "spatial_scale")
    pooled_height = helper._get_const(pooled_height, "i", "pooled_height")
    pooled_width = helper._get_const(pooled_width, "i", "pooled_width")
    sampling_ratio = helper._get_const(sampling_ratio, "i", "sampling_ratio")
    aligned = helper._get_const(aligned, "b", "aligned")
    long = lambda values: g.op("Constant", value_t=torch.tensor(values, dtype=torch.long))
    batch_indices = g.op("Cast", squeeze(g, select(g, rois, 1, long([0])), 1),
                         to_i=torch.onnx.TensorProtoDataType.INT64)
    boxes = select(g, rois, 1, long([1, 2, 3, 4]))
    # torchvision's -1 ("adaptive: ceil(roi size / output size)") is ONNX's 0.
    sampling_ratio = max(int(sampling_ratio), 0)
    return g.op("RoiAlign", input, boxes, batch_indices,
                coordinate_transformation_mode_s="half_pixel" if aligned else "output_half_pixel",
                spatial_scale_f=float(spatial_scale), output_height_i=int(pooled_height),
                output_width_i=int(pooled_width), sampling_ratio_i=sampling_ratio)


def _zero(g, self):
    """aten::zero, what tracing makes of an in-place `tensor.zero_()` (torchvision's Swin V2
    zeroes the key bias that way): zeros of self's shape and type."""
    _type_utils = _exporter_module("_type_utils")
    symbolic_helper = _exporter_module("symbolic_helper")

    _used.add("aten_zero")
    shape = g.op("Shape", self)
    scalar = symbolic_helper._try_get_scalar_type(self)
    if scalar is not None:
        # torch 1.13 names the type ("Float"); torch 2.x returns a JitScalarType.
        if not hasattr(scalar, "dtype"):
            scalar = _type_utils.JitScalarType.from_name(scalar)
        dtype = scalar.dtype()
        return g.op("ConstantOfShape", shape, value_t=torch.tensor([0], dtype=dtype))
    zeros = g.op("ConstantOfShape", shape, value_t=torch.tensor([0], dtype=torch.float))
    if symbolic_helper.GLOBALS.export_onnx_opset_version >= 15:
        return g.op("CastLike", zeros, self)
    return zeros


def _grid_sampler(g, input, grid, mode_enum, padding_mode_enum, align_corners):
    """aten::grid_sampler with its grid in the input's element type. The TorchScript exporter
    types a grid made from traced sizes (torch.linspace over a shape, as Mask2Former's and
    OneFormer's deformable attention build their reference points) as double beside a float
    input, which PyTorch computes in float32; ONNX allows the pair, ONNX Runtime's CPU kernel does
    not ("Could not find an implementation for GridSample(16)"). Then the exporter's own symbolic
    gets the grid cast to the input's type."""
    symbolic_helper = _exporter_module("symbolic_helper")
    own = _exporter_module("symbolic_opset16").grid_sampler
    types = [symbolic_helper._try_get_scalar_type(v) for v in (input, grid)]
    if None in types or types[0] != types[1]:
        _used.add("grid_sampler_grid_type")
        grid = g.op("CastLike", grid, input)
    return own(g, input, grid, mode_enum, padding_mode_enum, align_corners)


def _repeated_heads(g, kv, query):
    """kv (..., kv heads, length, width) with each head repeated in place until there are as
    many as query's (..., heads, length, width): what PyTorch's grouped-query attention does
    (repeat_interleave over the heads axis), in shape-independent ONNX."""
    def ints(*values):
        return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))

    kv_shape, query_shape = g.op("Shape", kv), g.op("Shape", query)
    kv_heads = g.op("Slice", kv_shape, ints(-3), ints(-2))
    heads = g.op("Slice", query_shape, ints(-3), ints(-2))
    lead = g.op("Slice", kv_shape, ints(0), ints(-3))
    tail = g.op("Slice", kv_shape, ints(-2), ints(2 ** 62))
    groups = g.op("Concat", lead, kv_heads, g.op("Div", heads, kv_heads), tail, axis_i=0)
    grouped = g.op("Expand", g.op("Unsqueeze", kv, ints(-3)), groups)
    return g.op("Reshape", grouped, g.op("Concat", lead, heads, tail, axis_i=0))


def _grouped_query_attention(g, query, key, value, attn_mask=None, dropout_p=0.0,
                             is_causal=False, scale=None, enable_gqa=False):
    """aten::scaled_dot_product_attention with enable_gqa=True (transformers 5 asks for it
    wherever keys and values have fewer heads than queries and no mask is given: Llama-like
    models of grouped-query attention). The TorchScript exporter's own symbolic refuses it
    ("conversion of scaled_dot_product_attention not implemented if enable_gqa is True"), so
    an export that fell back to it failed; the keys' and values' heads are repeated to the
    queries' first, then the exporter's own symbolic writes the attention."""
    symbolic_helper = _exporter_module("symbolic_helper")
    own = _exporter_module("symbolic_opset14").scaled_dot_product_attention
    if symbolic_helper._maybe_get_const(enable_gqa, "b"):
        _used.add("sdpa_grouped_query")
        key, value = _repeated_heads(g, key, query), _repeated_heads(g, value, query)
        enable_gqa = g.op("Constant", value_t=torch.tensor(False))
    return own(g, query, key, value, attn_mask, dropout_p, is_causal, scale, enable_gqa)


def _scalar_name(value):
    """The element type the exporter knows for a graph value ("Float", "Bool", ...), or None:
    torch 1.13 gives the name, torch 2 a JitScalarType."""
    scalar = _exporter_module("symbolic_helper")._try_get_scalar_type(value)
    return scalar.scalar_name() if hasattr(scalar, "scalar_name") else scalar


def _diff(g, self, n, dim, prepend, append):
    """aten::diff (torch.diff: differences of neighbours along `dim`, `n` times, after
    concatenating `prepend` and `append`), which the TorchScript exporter has no symbolic for
    (Pocket TTS's audio tokenizer finds its frames' boundaries with it): each pass subtracts the
    slice [:-1] from the slice [1:]; booleans, which torch.diff compares, by Xor."""
    symbolic_helper = _exporter_module("symbolic_helper")
    n = symbolic_helper._get_const(n, "i", "n")
    dim = symbolic_helper._get_const(dim, "i", "dim")

    def ints(*values):
        return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))

    parts = [v for v in (prepend, self, append) if not symbolic_helper._is_none(v)]
    values = parts[0] if len(parts) == 1 else g.op("Concat", *parts, axis_i=dim)
    boolean = _scalar_name(self) == "Bool"
    _used.add("aten_diff")
    for _ in range(n):
        later = g.op("Slice", values, ints(1), ints(2 ** 62), ints(dim))
        earlier = g.op("Slice", values, ints(0), ints(-1), ints(dim))
        values = g.op("Xor" if boolean else "Sub", later, earlier)
    return values


# torch.cumsum's result types where no dtype is asked for: integers and booleans sum as int64.
_CUMSUM_TO_INT64 = ("Bool", "Byte", "Char", "Short", "Int")


def _cumsum(g, self, dim, dtype=None):
    """aten::cumsum with torch's result type: the TorchScript exporter's own symbolic writes
    CumSum over the input as it is, which ONNX refuses for booleans ("CumSum ... has unsupported
    type: tensor(bool)": Pocket TTS counts its frames' boundaries so) and which sums narrower
    integers in their own type where torch sums them as int64. The input is cast first."""
    symbolic_helper = _exporter_module("symbolic_helper")
    own = _exporter_module("symbolic_opset11").cumsum
    if symbolic_helper._is_none(dtype) and _scalar_name(self) in _CUMSUM_TO_INT64:
        _used.add("cumsum_integer_sum")
        self = g.op("Cast", self, to_i=torch.onnx.TensorProtoDataType.INT64)
    return own(g, self, dim, dtype)


def _isin(g, elements, test_elements, assume_unique=False, invert=False):
    """aten::isin (torch.isin: whether each element is among test_elements), which no
    TorchScript exporter has a symbolic for: Grounding DINO finds its text's special tokens with
    it. Each element against every test element (Equal, broadcast over a new last axis), any
    of them (ReduceMax over integers: ONNX's ReduceMax takes booleans only from opset 20)."""
    invert = _exporter_module("symbolic_helper")._maybe_get_const(invert, "b")
    call, ints, _ = _torchscript_writer(g)
    _used.add("aten_isin")
    tests = call("Reshape", test_elements, ints(-1))
    equal = call("Equal", call("Unsqueeze", elements, ints(-1)), tests)
    found = call("ReduceMax", call("Cast", equal, to=torch.onnx.TensorProtoDataType.INT32),
                 axes=[-1], keepdims=0)
    found = call("Cast", found, to=torch.onnx.TensorProtoDataType.BOOL)
    return call("Not", found) if invert else found


def _torchscript_writer(g):
    """(call, ints, scalar) writing nodes into the TorchScript exporter's graph g: call(op,
    *inputs, **integer attributes), a reduction's `axes` as an input from opset 18 and an
    attribute before; ints(*values) a 1-D int64 constant, scalar(value) a 0-d one."""
    opset = _exporter_module("symbolic_helper").GLOBALS.export_onnx_opset_version

    def ints(*values):
        return g.op("Constant", value_t=torch.tensor(values, dtype=torch.int64))

    def scalar(value):
        return g.op("Constant", value_t=torch.tensor(value, dtype=torch.int64))

    def call(name, *inputs, axes=None, **attributes):
        attributes = {k + "_i": v for k, v in attributes.items()}
        if axes is not None and opset >= 18:
            inputs += (ints(*axes),)
        elif axes is not None:
            attributes["axes_i"] = list(axes)
        return g.op(name, *inputs, **attributes)
    return call, ints, scalar


def running_extreme(call, ints, scalar, x, dim, rank, largest):
    """(values, indices) of torch.cummax (largest) or torch.cummin along `dim` of x, of `rank`
    axes, in ONNX (opset 18), which has no such op: every element against each element up to
    it (a triangular j <= i comparison: n x n along the axis), the others filled with the element
    itself, which never changes the extreme; the index of the last extreme, as torch gives it
    for ties, and never past i. `call(op, *inputs, **attributes)` writes a node, `ints(*v)` a
    1-D int64 constant, `scalar(v)` a 0-d one: the same algorithm for both exporters."""
    d = dim + rank if dim < 0 else dim
    trailing = list(range(2, 1 + rank - d))  # axes after the pair (j, i) in the mask
    n = call("Gather", call("Shape", x), scalar(d), axis=0)
    positions = call("Range", scalar(0), n, scalar(1))
    mask = call("LessOrEqual", call("Unsqueeze", positions, ints(1)),
                call("Unsqueeze", positions, ints(0)))
    if trailing:
        mask = call("Unsqueeze", mask, ints(*trailing))
        positions = call("Unsqueeze", positions, ints(*[a - 1 for a in trailing]))
    filled = call("Where", mask, call("Unsqueeze", x, ints(d + 1)), call("Unsqueeze", x, ints(d)))
    values = call("ReduceMax" if largest else "ReduceMin", filled, axes=[d], keepdims=0)
    last = call("ArgMax" if largest else "ArgMin", filled, axis=d, keepdims=0,
                select_last_index=1)
    return values, call("Min", last, positions)


def _cumulative_extreme_symbolic(largest):
    """aten::cummax or aten::cummin for the TorchScript exporter, which has neither (Grounding
    DINO's text mask: the previous and next special token of each token)."""
    def symbolic(g, self, dim):
        symbolic_helper = _exporter_module("symbolic_helper")
        dim = symbolic_helper._get_const(dim, "i", "dim")
        rank = symbolic_helper._get_tensor_rank(self)
        if rank is None:
            raise RuntimeError("aten::%s over a tensor of unknown rank"
                               % ("cummax" if largest else "cummin"))
        _used.add("aten_cummax" if largest else "aten_cummin")
        return running_extreme(*_torchscript_writer(g), self, dim, rank, largest)
    return symbolic


def _memory_order(sizes, strides):
    """The permutation of a tensor's axes that lists its elements in memory order (strides
    largest first), where its traced strides are a dense layout other than the row-major one;
    None where they are row-major or unknown, or not dense (overlapping, or with gaps). Where
    the trace lost the sizes (a padding computed from the input's length, as Longformer's), the
    strides must nest (each a multiple of the next, the last 1), which every dense layout's do."""
    if not strides or None in strides:
        return None
    order = sorted(range(len(strides)), key=lambda axis: (-strides[axis], axis))
    if order == sorted(order):
        return None
    if sizes and None not in sizes and len(sizes) == len(strides):
        expected = 1
        for axis in reversed(order):
            if sizes[axis] != 1 and strides[axis] != expected:
                return None
            expected *= sizes[axis]
        return order
    ordered = [strides[axis] for axis in order]
    nested = all(a % b == 0 for a, b in zip(ordered, ordered[1:]) if b > 0)
    return order if ordered[-1] == 1 and min(ordered) > 0 and nested else None


def _as_strided(g, self, sizes, strides, offset=None):
    """aten::as_strided over a tensor that is not row-major in memory: torch reads the sizes and
    strides it is given over the tensor's storage, the exporter's own symbolic over the tensor
    flattened in its logical order, which is the storage's only for a row-major tensor.
    Longformer chunks its queries and keys so, after a transpose whose reshape is a view at batch
    size 1 (corpus numeric_mismatch: max rel error 0.03 at width 768; transformers' own
    `onnx_export=True` avoids as_strided). The input's axes are put in memory order first, from
    the strides the trace recorded."""
    own = _exporter_module("symbolic_opset9").as_strided
    try:
        order = _memory_order(self.type().sizes(), self.type().strides())
    except (AttributeError, RuntimeError):  # not a tensor type with a known layout
        order = None
    if order is not None:
        _used.add("as_strided_memory_order")
        self = g.op("Transpose", self, perm_i=order)
    return own(g, self, sizes, strides, offset)


# name, op, first opset the fix is for, the symbolic, needs: module that must be imported,
# kind: "adds" (only where the exporter has no symbolic) or "wraps" (over the exporter's own).
# Adding or changing a fix: bump kExporterFixesRevision in src/stages/export_pytorch.cpp (cache keys).
_FIXES = (
    ("roi_align_opset16", "torchvision::roi_align", 16, _roi_align, "torchvision", "adds"),
    ("aten_zero", "aten::zero", 9, _zero, None, "adds"),
    ("grid_sampler_grid_type", "aten::grid_sampler", 16, _grid_sampler, None, "wraps"),
    ("sdpa_grouped_query", "aten::scaled_dot_product_attention", 14, _grouped_query_attention,
     None, "wraps"),
    ("aten_diff", "aten::diff", 9, _diff, None, "adds"),
    ("cumsum_integer_sum", "aten::cumsum", 11, _cumsum, None, "wraps"),
    ("aten_isin", "aten::isin", 13, _isin, None, "adds"),
    ("as_strided_memory_order", "aten::as_strided", 9, _as_strided, None, "wraps"),
    ("aten_cummax", "aten::cummax", 13, _cumulative_extreme_symbolic(True), None, "adds"),
    ("aten_cummin", "aten::cummin", 13, _cumulative_extreme_symbolic(False), None, "adds"),
)


def _versions():
    versions = ["torch %s" % torch.__version__.split("+")[0]]
    if "torchvision" in sys.modules:
        versions.append("torchvision %s" % sys.modules["torchvision"].__version__.split("+")[0])
    return ", ".join(versions)


def apply(opset):
    """Registers the fixes the installed exporter needs at `opset` (once per process). Returns
    the export log's lines: which fixes this torch/torchvision has registered and which it does
    not need (its own symbolic exists), and any fix it could not check or register (the export
    goes on without that fix)."""
    problems, registered, not_needed, nothing_to_wrap = [], [], [], []
    for fix, op, first, symbolic, needs, kind in _FIXES:
        if opset < first or (needs and needs not in sys.modules):
            continue
        if (op, first) in _applied:
            registered.append(fix)
            continue
        try:
            has_own = _has_own_symbolic(op, first, opset)
            if kind == "adds" and has_own:
                not_needed.append(fix)
                continue
            if kind == "wraps" and not has_own:  # an older torch without the op (1.13: SDPA)
                nothing_to_wrap.append(fix)
                continue
            torch.onnx.register_custom_op_symbolic(op, symbolic, first)
            _applied[(op, first)] = fix
            registered.append(fix)
        except Exception as e:  # an exporter whose registry we do not know: do without the fix
            problems.append("exporter fix %s cannot be registered: %s: %s"
                            % (fix, type(e).__name__, e))
    lines = []
    if registered or not_needed or nothing_to_wrap:
        line = ("exporter fixes for %s at opset %d: registered: %s; not needed (the exporter "
                "has its own): %s" % (_versions(), opset, ", ".join(registered) or "none",
                                      ", ".join(not_needed) or "none"))
        if nothing_to_wrap:
            line += "; not registered (the exporter has no symbolic to wrap): %s" % (
                ", ".join(nothing_to_wrap))
        lines.append(line)
    return lines + problems


def _dynamo_parameter():
    """torch.onnx.export's `dynamo` parameter (inspect.Parameter), or None before torch 2.5."""
    import inspect
    try:
        return inspect.signature(torch.onnx.export).parameters.get("dynamo")
    except (TypeError, ValueError):
        return None


def export_arguments(exporter):
    """torch.onnx.export's keyword arguments for `exporter`: "torchscript" (the tracing
    exporter; dynamo=False is said explicitly where the parameter exists, as torch >= 2.9 makes
    dynamo=True the default) or "dynamo" (torch.export-based; needs onnxscript). Raises
    ValueError with one line when this interpreter cannot use it."""
    has_dynamo = _dynamo_parameter() is not None
    if exporter == "torchscript":
        return {"dynamo": False} if has_dynamo else {}
    if exporter != "dynamo":
        raise ValueError("exporter %r: expected torchscript or dynamo" % exporter)
    if not has_dynamo:
        raise ValueError("the dynamo exporter needs torch.onnx.export(dynamo=True) (torch >= 2.5), "
                         "found torch %s" % torch.__version__.split("+")[0])
    import importlib.util
    if importlib.util.find_spec("onnxscript") is None:
        raise ValueError("the dynamo exporter needs the onnxscript package, which this "
                         "interpreter lacks (pip install onnxscript)")
    return {"dynamo": True}


def library_translations(module):
    """The dynamo exporter's translations that `module`'s library ships for its own ops, or None.
    transformers 5 runs mixture-of-experts layers through a custom op on CPU
    (torch.ops.transformers.grouped_mm_fallback) that torch.onnx cannot translate (ConversionError)
    and ships the onnxscript functions for it, and for ops whose torchlib translation it found
    wrong, with its own ONNX exporter (transformers.exporters.exporter_onnx, which passes them as
    custom_translation_table). A private name: where a release moves it, None (the export goes
    on as before)."""
    if not type(module).__module__.startswith("transformers."):
        return None
    try:
        from transformers.exporters.exporter_onnx import _ONNX_TRANSLATION_TABLE
    except Exception:  # noqa: BLE001 (an older or newer transformers: no table)
        return None
    return dict(_ONNX_TRANSLATION_TABLE) or None


def exporter_version(exporter):
    """What made the file: torch's version, and onnxscript's for the dynamo exporter."""
    versions = "torch %s" % torch.__version__.split("+")[0]
    if exporter == "dynamo":
        import importlib.metadata
        try:
            versions += ", onnxscript %s" % importlib.metadata.version("onnxscript")
        except importlib.metadata.PackageNotFoundError:
            pass
    return versions


def unsupported_operator_error():
    """The TorchScript exporter's error for an op it has no symbolic for: torch.onnx.errors'
    UnsupportedOperatorError, which moved with the exporter in torch 2.9; () where absent."""
    import importlib
    for name in ("torch.onnx.errors", "torch.onnx._internal.torchscript_exporter.errors"):
        try:
            found = getattr(importlib.import_module(name), "UnsupportedOperatorError", None)
        except ImportError:
            found = None
        if found is not None:
            return found
    return ()


def record(fix):
    """Notes that a graph being exported used `fix` (a symbolic or a translation of turnkey's)."""
    _used.add(fix)


def reset():
    _used.clear()


def used():
    """The fixes called since the last reset(), sorted."""
    return sorted(_used)
