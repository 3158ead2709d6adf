"""turnkey's translations for the dynamo exporter of ops torch.onnx cannot translate (torch
2.15's torchlib has none, raises NotImplementedError, or takes only some ranks): onnxscript
functions passed as torch.onnx.export's custom_translation_table, beside the ones transformers
ships for its models.
Each records its use with exporter_fixes.record, so the stats name the ops turnkey wrote."""

import contextlib
import math

import torch

from .exporter_fixes import record, running_extreme


def _is_all_true(self):
    """aten._is_all_true (what torch._check_tensor_all leaves in a graph torch.export makes:
    transformers' check that a text's image tokens match its image features) as ONNX: the least
    of the tensor as integers, as a bool. torch 2.15's torchlib has none ("ConversionError:
    Error when translating node %_is_all_true"); the assertion it feeds is not exported, so the
    value is dead code the exporter's optimizer removes."""
    from onnxscript import opset18 as op

    record("aten_is_all_true")
    return op.Cast(op.ReduceMin(op.Cast(self, to=6), keepdims=0), to=9)  # INT32, then BOOL


# Giles' single-precision erfinv ("Approximating the erfinv function", GPU Computing Gems Jade,
# 2011): a polynomial in w = -log(1 - x^2) - 2.5 where w < 5, in sqrt(w) - 3 beyond; highest
# power first.
_ERFINV_CENTRAL = (2.81022636e-08, 3.43273939e-07, -3.5233877e-06, -4.39150654e-06,
                   0.00021858087, -0.00125372503, -0.00417768164, 0.246640727, 1.50140941)
_ERFINV_TAIL = (-0.000200214257, 0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773,
                -0.0076224613, 0.00943887047, 1.00167406, 2.83297682)


def _erf_inv(self):
    """prims.erf_inv and aten.erfinv as ONNX, which has no such op (torch 2.15's torchlib raises
    NotImplementedError: Gemma 3n's sparse activations take the normal distribution's quantile
    of their target sparsity): Giles' approximation, then one Newton step on ONNX's Erf, so
    float32 results match torch.erfinv to a few units in the last place; +-1 gives +-inf and
    beyond that NaN, as torch's."""
    from onnxscript import opset18 as op

    record("aten_erfinv")

    def const(value):
        return op.CastLike(op.Constant(value_float=value), self)

    def horner(coefficients, w):
        p = const(coefficients[0])
        for c in coefficients[1:]:
            p = op.Add(op.Mul(p, w), const(c))
        return p

    one = const(1.0)
    w = op.Neg(op.Log(op.Mul(op.Sub(one, self), op.Add(one, self))))
    central = horner(_ERFINV_CENTRAL, op.Sub(w, const(2.5)))
    tail = horner(_ERFINV_TAIL, op.Sub(op.Sqrt(w), const(3.0)))
    y = op.Mul(op.Where(op.Less(w, const(5.0)), central, tail), self)
    slope = op.Mul(const(1.1283791670955126), op.Exp(op.Neg(op.Mul(y, y))))  # d erf/dy
    newton = op.Sub(y, op.Div(op.Sub(op.Erf(y), self), slope))
    # At +-1 the polynomials give -inf for both signs; beyond, w is already NaN.
    edge = op.Where(op.Equal(op.Abs(self), one), op.Mul(op.Sign(self), const(float("inf"))), y)
    return op.Where(op.Less(op.Abs(self), one), newton, edge)


def _cumulative_extreme_translation(largest):
    """aten.cummax or aten.cummin for the dynamo exporter (torchlib raises NotImplementedError)."""
    def translation(self, dim):
        from onnxscript import opset18 as op

        record("aten_cummax" if largest else "aten_cummin")

        def ints(*values):
            return op.Constant(value_ints=list(values))

        def scalar(value):
            return op.Constant(value_int=value)

        def call(name, *inputs, axes=None, **attributes):
            inputs += (ints(*axes),) if axes is not None else ()
            return getattr(op, name)(*inputs, **attributes)
        return running_extreme(call, ints, scalar, self, dim, len(self.shape), largest)
    return translation


# The element types torchlib passes as arange's `dtype` (ONNX's numbers), as torch's.
_ARANGE_TYPES = {1: torch.float32, 2: torch.uint8, 3: torch.int8, 5: torch.int16, 6: torch.int32,
                 7: torch.int64, 10: torch.float16, 11: torch.float64}
_MAX_FOLDED_ARANGE = 1 << 20  # elements written as a constant; longer ranges stay Range


def _folded_arange(numbers, dtype):
    """torch.arange(*numbers) as an ONNX constant, or None where torchlib's Range gives torch's
    values: some bound or step is not a Python number (a size traced as a symbol), none is a
    float, or the range is long. torch counts a float range in double precision, torchlib's
    Range in float32: Idefics 3's arange(1/7, 1.0, 1/7) has 7 elements in torch and 6 in the
    file, whose recorded shape the ONNX checker then refuses ("Inferred shape and existing
    shape differ in dimension 0: (6) vs (7)")."""
    if not all(isinstance(n, (int, float)) and not isinstance(n, bool) for n in numbers) \
            or not any(isinstance(n, float) for n in numbers):
        return None
    if dtype not in (-1, None) and dtype not in _ARANGE_TYPES:
        return None
    values = torch.arange(*numbers, dtype=_ARANGE_TYPES.get(dtype))
    if values.numel() > _MAX_FOLDED_ARANGE:
        return None
    import onnx_ir as ir
    from onnxscript import opset18 as op

    record("aten_arange_float")
    return op.Constant(value=ir.tensor(values.numpy()))


def _folded_or_torchlib(numbers, dtype, torchlib_name, *arguments):
    """_folded_arange of `numbers`, else torchlib's own translation `torchlib_name`."""
    folded = _folded_arange(numbers, dtype)
    if folded is not None:
        return folded
    from onnxscript.function_libs.torch_lib.ops import core

    return getattr(core, torchlib_name)(*arguments)


# aten.arange's three overloads: their parameters spelt out, which the exporter reads to call them.
def _arange_start_step(start, end, step=1, dtype=-1, layout="", device="", pin_memory=False):
    return _folded_or_torchlib((start, end, step), dtype, "aten_arange_start_step",
                               start, end, step, dtype, layout, device, pin_memory)


def _arange_start(start, end, dtype=-1, layout="", device="", pin_memory=False):
    return _folded_or_torchlib((start, end), dtype, "aten_arange_start",
                               start, end, dtype, layout, device, pin_memory)


def _arange(end, dtype=-1, layout="", device="", pin_memory=False):
    return _folded_or_torchlib((end,), dtype, "aten_arange", end, dtype, layout, device, pin_memory)


def _same_leading_dims(*tensors):
    """Whether the tensors' dims before the last two are the same, as the exporter knows them."""
    leads = [tuple(t.shape)[:-2] for t in tensors]
    return all(lead == leads[0] for lead in leads[1:])


def _torchlib_attention(opset):
    """The translation of aten.scaled_dot_product_attention torch.onnx would pick at `opset`:
    from opset 23 torch's own (ONNX's Attention op), below it onnxscript's torchlib."""
    if opset >= 23:
        try:
            from torch.onnx._internal.exporter._torchlib.ops import nn as torch_nn
            return torch_nn.aten_scaled_dot_product_attention_23
        except (ImportError, AttributeError):  # a private module a release may move
            pass
    from onnxscript.function_libs.torch_lib.ops import nn
    return nn.aten_scaled_dot_product_attention


def _attention_translation(opset):
    """aten.scaled_dot_product_attention for the dynamo exporter at `opset`."""
    translate = _torchlib_attention(opset)

    def attention(query, key, value, attn_mask=None, dropout_p=0.0, is_causal=False, scale=None,
                  enable_gqa=False):
        return _attention(lambda q, k, v, mask: translate(q, k, v, mask, dropout_p, is_causal,
                                                          scale, enable_gqa),
                          query, key, value, attn_mask)
    return attention


def _attention(torchlib, query, key, value, attn_mask):
    """aten.scaled_dot_product_attention of any rank: torchlib's translation takes 4-D query, key
    and value only ("AssertionError: only 4D query, key, and value are supported"), while torch
    takes any leading dims (timm's Hiera attends within mask units: 5-D). Where the ranks are
    not 4 but the leading dims agree, they are folded into the heads' dim, torchlib's
    translation runs on (1, -1, L, E) with the mask broadcast to (..., L, S) and folded alike,
    and the result takes the query's leading dims back; 4-D (or leading dims that broadcast)
    goes to torchlib's translation unchanged. `torchlib(q, k, v, mask)` is that translation with
    the call's other arguments."""
    import onnx_ir as ir
    from onnxscript import opset18 as op

    ranks = {len(query.shape), len(key.shape), len(value.shape)}
    if ranks == {4} or len(ranks) != 1 or not _same_leading_dims(query, key, value):
        return torchlib(query, key, value, attn_mask)
    record("aten_scaled_dot_product_attention_any_rank")

    def folded(tensor, dims, dtype):
        """`tensor` of shape `dims` as (1, -1, dims[-2], dims[-1])."""
        last_two = op.Shape(tensor, start=-2)
        value = op.Reshape(tensor, op.Concat(op.Constant(value_ints=[1, -1]), last_two, axis=0))
        # Reshape's output has no shape or type at trace time; torchlib's translation reads the
        # rank, and the mask's type (a boolean mask is applied otherwise than an additive one).
        leading = dims[:-2]
        size = math.prod(leading) if all(isinstance(d, int) for d in leading) else None
        value.shape, value.dtype = ir.Shape([1, size, *dims[-2:]]), dtype
        return value

    if attn_mask is not None:  # broadcast to (..., L, S) first: its leading dims fold alike
        dims = (*tuple(query.shape)[:-1], tuple(key.shape)[-2])
        whole = op.Concat(op.Shape(query, start=0, end=-1), op.Shape(key, start=-2, end=-1),
                          axis=0)
        attn_mask = folded(op.Expand(attn_mask, whole), dims, attn_mask.dtype)
    out = torchlib(*(folded(t, tuple(t.shape), t.dtype) for t in (query, key, value)), attn_mask)
    return op.Reshape(out, op.Concat(op.Shape(query, start=0, end=-1),
                                     op.Shape(value, start=-1), axis=0))


def _histc(self, bins=100, min=0.0, max=0.0):
    """aten.histc where its range is the data's (min == max, as by default): torchlib's
    translation raises NotImplementedError for it, and transformers 5's experts kernel counts
    the tokens of each expert with histc(min=0, max=num_experts - 1), which is such a range
    where a model has one expert (HunYuan-MoE V1's default). As torch computes it: the data's
    least and greatest values (one below and above where they are equal), bin = floor((x - least)
    * bins / (greatest - least)), the greatest value in the last bin; NaN counts nowhere. Other
    ranges go to torchlib's translation."""
    if min != max:
        from onnxscript.function_libs.torch_lib.ops import core

        return core.aten_histc(self, bins, min, max)
    from onnxscript import opset18 as op

    record("aten_histc_data_range")
    flat = op.Reshape(self, op.Constant(value_ints=[-1]))
    one = op.CastLike(op.Constant(value_float=1.0), flat)
    least, greatest = op.ReduceMin(flat, keepdims=0), op.ReduceMax(flat, keepdims=0)
    same = op.Equal(least, greatest)
    least = op.Where(same, op.Sub(least, one), least)
    greatest = op.Where(same, op.Add(greatest, one), greatest)
    scale = op.Div(op.CastLike(op.Constant(value_float=float(bins)), flat),
                   op.Sub(greatest, least))
    index = op.Cast(op.Floor(op.Mul(op.Sub(flat, least), scale)), to=7)  # INT64
    index = op.Min(index, op.Constant(value_int=bins - 1))
    # NaN's bin is no bin: its index is made -1.
    index = op.Where(op.IsNaN(flat), op.Constant(value_int=-1), index)
    edges = op.Range(op.Constant(value_int=0), op.Constant(value_int=bins),
                     op.Constant(value_int=1))
    hits = op.Equal(op.Unsqueeze(edges, op.Constant(value_ints=[1])),
                    op.Unsqueeze(index, op.Constant(value_ints=[0])))
    return op.ReduceSum(op.CastLike(hits, flat), op.Constant(value_ints=[1]), keepdims=0)


def _complex_unsqueeze(self, dim):
    """aten.unsqueeze of a complex tensor, which the dynamo exporter carries as its real pairs
    (a trailing dim of 2): torch 2.15 has no complex translation of it ("DispatchError: No ONNX
    function found for aten.unsqueeze ... No decompositions registered for the complex-valued
    input": DeepSeek V2's rotary frequencies, made by torch.polar, unsqueezed before they turn
    the queries). A dim counted from the end is counted before the pairs' dim."""
    from onnxscript import opset18 as op

    record("aten_unsqueeze_complex")
    if dim < 0:
        dim += len(self.shape)  # a complex tensor of rank r is carried as r + 1 dims: dim + r + 1
    return op.Unsqueeze(self, op.Constant(value_ints=[dim]))


# (namespace of torch.ops, op, overload, translation): the ops turnkey translates for the dynamo
# exporter.
_TRANSLATIONS = (("aten", "_is_all_true", "default", _is_all_true),
                 ("aten", "erfinv", "default", _erf_inv), ("prims", "erf_inv", "default", _erf_inv),
                 ("aten", "cummax", "default", _cumulative_extreme_translation(True)),
                 ("aten", "cummin", "default", _cumulative_extreme_translation(False)),
                 ("aten", "arange", "default", _arange), ("aten", "arange", "start", _arange_start),
                 ("aten", "arange", "start_step", _arange_start_step),
                 ("aten", "histc", "default", _histc))

# The same for ops whose translation depends on the opset asked: (..., opset -> translation).
_TRANSLATIONS_BY_OPSET = (("aten", "scaled_dot_product_attention", "default",
                           _attention_translation),)

# The same for complex-valued inputs, which torch.onnx's custom_translation_table cannot take (it
# registers every function there for real inputs): complex_translations adds them to the registry
# torch.onnx builds.
_COMPLEX_TRANSLATIONS = (("aten", "unsqueeze", "default", _complex_unsqueeze),)


def _name(namespace, name, overload):
    return "%s.%s" % (namespace, name) + ("" if overload == "default" else "." + overload)


# Their names, for the export log.
NAMES = tuple(sorted(_name(*row[:3]) for row in _TRANSLATIONS + _TRANSLATIONS_BY_OPSET)
              + sorted(_name(*row[:3]) + " (complex)" for row in _COMPLEX_TRANSLATIONS))


def _torch_op(namespace, name, overload):
    """torch.ops.<namespace>.<name>.<overload>, or None where this torch has no such op."""
    return getattr(getattr(getattr(torch.ops, namespace, None), name, None), overload, None)


@contextlib.contextmanager
def complex_translations(log):
    """While it is open, the registry torch.onnx builds for an export holds turnkey's
    translations of ops on complex-valued inputs (_COMPLEX_TRANSLATIONS), registered as
    torch.onnx registers its own. A private class: where a release moves it, a line in `log`,
    and the export goes on without them."""
    try:
        from torch.onnx._internal.exporter import _registration
        descriptor = _registration.ONNXRegistry.__dict__["from_torchlib"]
        build = descriptor.__func__
    except (ImportError, AttributeError, KeyError) as error:
        log.append("turnkey's translations of complex-valued ops not registered: torch.onnx's "
                   "registry is not where torch 2.15 has it (%s)" % error)
        yield
        return

    def from_torchlib(cls, *args, **kwargs):
        registry = build(cls, *args, **kwargs)
        for namespace, name, overload, function in _COMPLEX_TRANSLATIONS:
            op = _torch_op(namespace, name, overload)
            try:
                if op is not None:
                    registry.register_op(op, function, is_complex=True)
            except (TypeError, ValueError) as error:  # a release that registers otherwise
                log.append("turnkey's complex-valued %s not registered: %s"
                           % (_name(namespace, name, overload), error))
        return registry

    _registration.ONNXRegistry.from_torchlib = classmethod(from_torchlib)
    try:
        yield
    finally:
        _registration.ONNXRegistry.from_torchlib = descriptor


def own_translations(opset):
    """turnkey's translations for the dynamo exporter at `opset`, of aten and prims ops torch.onnx
    cannot translate, or not in every case ({op: onnxscript function}; passed with the library's,
    which take precedence); an op this torch does not have is left out."""
    rows = _TRANSLATIONS + tuple((namespace, name, overload, factory(opset))
                                 for namespace, name, overload, factory in _TRANSLATIONS_BY_OPSET)
    own = {}
    for namespace, name, overload, function in rows:
        op = _torch_op(namespace, name, overload)
        if op is not None:
            own[op] = function
    return own


def mend(model):
    """Mends what the dynamo exporter's program (an onnx_ir model) would write wrong: a constant
    that nodes read but no node makes and no initializer holds becomes the initializer it stands
    for. onnxscript 0.7.2's optimizer, fusing two clips of one tensor, names the fused bounds
    after that tensor; where it fuses more than one pair on the same tensor, only the first
    pair's bounds are registered (Gemma 4 audio's clipped projections: 48 `mul_N_min_1`-like
    values), and the file is refused: "Nodes in a graph must be topologically sorted, however
    input 'mul_8_min_1' of node ... is not output of any previous nodes"."""
    graph = model.graph
    for node in graph:
        for value in node.inputs:
            if (value is not None and value.producer() is None and value.const_value is not None
                    and not value.is_graph_input() and not value.is_initializer()):
                graph.register_initializer(value)
                record("dangling_constants")
