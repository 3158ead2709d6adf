"""turnkey's translations for the dynamo exporter of ops torch.onnx cannot translate (torch
2.15's torchlib has none, or raises NotImplementedError): onnxscript functions passed as
torch.onnx.export's custom_translation_table, beside the ones transformers ships for its models.
Each records its use with exporter_fixes.record, so the stats name the ops turnkey wrote."""

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


# (namespace of torch.ops, op, translation): the ops turnkey translates for the dynamo exporter.
_TRANSLATIONS = (("aten", "_is_all_true", _is_all_true), ("aten", "erfinv", _erf_inv),
                 ("prims", "erf_inv", _erf_inv),
                 ("aten", "cummax", _cumulative_extreme_translation(True)),
                 ("aten", "cummin", _cumulative_extreme_translation(False)))

# Their names, for the export log.
NAMES = tuple(sorted({"%s.%s" % (namespace, name) for namespace, name, _ in _TRANSLATIONS}))


def own_translations():
    """turnkey's translations for the dynamo exporter, of aten and prims ops torch.onnx cannot
    translate ({op: onnxscript function}; passed with the library's, which take precedence); an
    op this torch does not have is left out."""
    own = {}
    for namespace, name, function in _TRANSLATIONS:
        op = getattr(getattr(getattr(torch.ops, namespace, None), name, None), "default", None)
        if op is not None:
            own[op] = function
    return own
