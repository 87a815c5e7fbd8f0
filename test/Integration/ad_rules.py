"""Every adjoint rule of train-differentiate against central finite
differences in float64.

Each case is a small train.step in float64 whose body applies one rule (or a
small family of them) to random parameters; the loss is sum(y * r) with
random weights r, so every element of y gets a distinct cotangent. For each
parameter p and a random direction v:

    fd = (L(p + e v) - L(p - e v)) / (2 e),   ad = <dL/dp, v>,   e = 1e-6

Both come from ga-run (the loss at perturbed parameters, the gradient at p).
The truncation error is O(e^2) ~ 1e-12 relative and rounding ~1e-16 / e =
1e-10, so |ad - fd| <= 1e-7 |fd| + 1e-8 is a generous bound in float64,
while a wrong rule (a dropped term, a wrong sign, a transposed map) is off by
O(1). Kinks (relu, max, min, abs, select) and ties (max reductions) are kept
away from the sample points by construction (inputs bounded away from
them), so FD is valid there too.

Usage: ad_rules.py --ga-run PATH --workdir DIR [--only NAME]
"""

import argparse
import os
import zlib

import numpy as np

from ga_scripts.reference_harness import Checker, run_ga_run

GEN = "#map = affine_map<(i, j) -> (i, j)>"


def t(shape, ety="f64"):
    return "tensor<" + "".join(f"{d}x" for d in shape) + ety + ">"


def ew(name, inputs, shape, body, out="f64"):
    """An elementwise linalg.generic over `shape` (identity maps)."""
    rank = len(shape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    m = f"affine_map<({dims}) -> ({dims})>"
    ins = ", ".join(v for v, _ in inputs)
    tys = ", ".join(t(shape, e) for _, e in inputs)
    args = ", ".join(f"%in{i}: {e}" for i, (_, e) in enumerate(inputs))
    return f"""
    %{name}_e = tensor.empty() : {t(shape, out)}
    %{name} = linalg.generic {{indexing_maps = [{", ".join([m] * (len(inputs) + 1))}],
        iterator_types = [{", ".join(['"parallel"'] * rank)}]}}
        ins({ins} : {tys}) outs(%{name}_e : {t(shape, out)}) {{
    ^bb0({args}, %out: {out}):
{body}
    }} -> {t(shape, out)}"""


def positive(shape, rng):
    return 0.5 + rng.random(shape)


def away_from_zero(shape, rng):
    return np.where(rng.random(shape) < 0.5, -1, 1) * (0.3 + rng.random(shape))


CASES = []


def case(name, params, body, y_shape, batch=(), tol=(1e-7, 1e-8), eps=1e-6,
         flags=()):
    """`flags`: ga-run's, for the cases that the default pipeline cannot
    compile."""
    CASES.append(dict(name=name, params=params, body=body, y_shape=y_shape,
                      batch=list(batch), tol=tol, eps=eps, flags=tuple(flags)))


# Scalar rules, elementwise.
case("exp-log-tanh-sqrt", [("x", [3, 4], away_from_zero)], ew("y", [("%x", "f64")], [3, 4], """
      %e = math.exp %in0 : f64
      %one = arith.constant 1.0 : f64
      %p = arith.addf %e, %one : f64
      %l = math.log %p : f64
      %th = math.tanh %in0 : f64
      %sq = arith.mulf %in0, %in0 : f64
      %sp = arith.addf %sq, %one : f64
      %s = math.sqrt %sp : f64
      %a = arith.addf %l, %th : f64
      %b = arith.mulf %a, %s : f64
      linalg.yield %b : f64"""), [3, 4])
case("rsqrt-erf-powf-neg-abs", [("x", [5], away_from_zero)], ew("y", [("%x", "f64")], [5], """
      %one = arith.constant 1.0 : f64
      %sq = arith.mulf %in0, %in0 : f64
      %sp = arith.addf %sq, %one : f64
      %r = math.rsqrt %sp : f64
      %er = math.erf %in0 : f64
      %k = arith.constant 1.5 : f64
      %pw = math.powf %sp, %k : f64
      %n = arith.negf %pw : f64
      %ab = math.absf %in0 : f64
      %a = arith.addf %r, %er : f64
      %b = arith.addf %a, %n : f64
      %c = arith.mulf %b, %ab : f64
      linalg.yield %c : f64"""), [5])
# The rules of the functions torch-mlir lowers PyTorch's softplus,
# log-sigmoid, trigonometric and hyperbolic functions to.
case("log1p-expm1-exp2-log2-log10", [("x", [2, 3], positive)], ew("y", [("%x", "f64")], [2, 3], """
      %a = math.log1p %in0 : f64
      %b = math.expm1 %in0 : f64
      %c = math.exp2 %in0 : f64
      %d = math.log2 %in0 : f64
      %e = math.log10 %in0 : f64
      %s1 = arith.mulf %a, %b : f64
      %s2 = arith.addf %s1, %c : f64
      %s3 = arith.mulf %s2, %d : f64
      %s4 = arith.addf %s3, %e : f64
      linalg.yield %s4 : f64"""), [2, 3])
case("sin-cos-tan-sinh-cosh-cbrt", [("x", [2, 3], away_from_zero)], ew("y", [("%x", "f64")], [2, 3], """
      %a = math.sin %in0 : f64
      %b = math.cos %in0 : f64
      %c = math.tan %in0 : f64
      %d = math.sinh %in0 : f64
      %e = math.cosh %in0 : f64
      %f = math.cbrt %in0 : f64
      %s1 = arith.mulf %a, %b : f64
      %s2 = arith.addf %s1, %c : f64
      %s3 = arith.mulf %s2, %d : f64
      %s4 = arith.addf %s3, %e : f64
      %s5 = arith.mulf %s4, %f : f64
      linalg.yield %s5 : f64"""), [2, 3])
case("atan-atan2-asin-acos-asinh-atanh-erfc-fma",
     [("x", [2, 3], away_from_zero), ("w", [2, 3], away_from_zero)],
     ew("y", [("%x", "f64"), ("%w", "f64")], [2, 3], """
      %h = arith.constant 0.3 : f64
      %xs = arith.mulf %in0, %h : f64
      %a = math.atan %in0 : f64
      %b = math.atan2 %in0, %in1 : f64
      %c = math.asin %xs : f64
      %d = math.acos %xs : f64
      %e = math.asinh %in0 : f64
      %f = math.atanh %xs : f64
      %g = math.erfc %in1 : f64
      %s1 = arith.mulf %a, %b : f64
      %s2 = arith.addf %s1, %c : f64
      %s3 = arith.mulf %s2, %d : f64
      %s4 = arith.addf %s3, %e : f64
      %s5 = arith.mulf %s4, %f : f64
      %s6 = math.fma %s5, %g, %in1 : f64
      linalg.yield %s6 : f64"""), [2, 3])
# math.fpowi: a constant exponent becomes multiplications (ga-legalize-
# import); a variable one (here -2..2 along a row, 0 included) keeps
# fpowi and its rule, in scalar code (a vector of exponents has no lowering).
case("fpowi-constant", [("x", [2, 3], away_from_zero)], ew("y", [("%x", "f64")], [2, 3], """
      %three = arith.constant 3 : i64
      %mtwo = arith.constant -2 : i32
      %c = math.fpowi %in0, %three : f64, i64
      %r = math.fpowi %in0, %mtwo : f64, i32
      %s = arith.addf %c, %r : f64
      linalg.yield %s : f64"""), [2, 3])
case("fpowi-variable", [("x", [2, 5], away_from_zero)], ew("y", [("%x", "f64")], [2, 5], """
      %j = linalg.index 1 : index
      %ji = arith.index_cast %j : index to i64
      %two = arith.constant 2 : i64
      %n = arith.subi %ji, %two : i64
      %p = math.fpowi %in0, %n : f64, i64
      linalg.yield %p : f64"""), [2, 5], flags=("--vectorize=false",))
case("add-sub-mul-div-same-operand-twice",
     [("x", [2, 3], away_from_zero), ("w", [2, 3], positive)],
     ew("y", [("%x", "f64"), ("%w", "f64"), ("%x", "f64")], [2, 3], """
      %s = arith.addf %in0, %in1 : f64
      %d = arith.subf %s, %in2 : f64
      %m = arith.mulf %in0, %in2 : f64
      %q = arith.divf %m, %in1 : f64
      %r = arith.addf %q, %d : f64
      linalg.yield %r : f64"""), [2, 3])
case("relu-select-min-max", [("x", [4, 3], away_from_zero), ("w", [4, 3], away_from_zero)],
     ew("y", [("%x", "f64"), ("%w", "f64")], [4, 3], """
      %z = arith.constant 0.0 : f64
      %relu = arith.maximumf %in0, %z : f64
      %mn = arith.minimumf %in0, %in1 : f64
      %c = arith.cmpf ogt, %in1, %z : f64
      %sq = arith.mulf %in0, %in0 : f64
      %sel = arith.select %c, %sq, %in1 : f64
      %a = arith.addf %relu, %mn : f64
      %b = arith.addf %a, %sel : f64
      linalg.yield %b : f64"""), [4, 3])
case("float-casts", [("x", [6], away_from_zero)], ew("y", [("%x", "f64")], [6], """
      %h = arith.truncf %in0 : f64 to f32
      %s = arith.mulf %h, %h : f32
      %b = arith.extf %s : f32 to f64
      %c = arith.mulf %b, %in0 : f64
      linalg.yield %c : f64"""), [6], tol=(1e-3, 1e-5), eps=1e-2)
# The body rounds to f32, so the step e must be far above f32's resolution
# (1e-7 relative): e = 1e-2 gives truncation ~1e-4 and rounding ~1e-5.

# Broadcast, reduction and contraction indexing maps.
case("bias-broadcast-and-outer-product", [("a", [3], away_from_zero), ("b", [4], away_from_zero), ("x", [3, 4], away_from_zero)], """
    %e = tensor.empty() : tensor<3x4xf64>
    %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i)>, affine_map<(i, j) -> (j)>, affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
        iterator_types = ["parallel", "parallel"]}
        ins(%a, %b, %x : tensor<3xf64>, tensor<4xf64>, tensor<3x4xf64>) outs(%e : tensor<3x4xf64>) {
    ^bb0(%p: f64, %q: f64, %r: f64, %o: f64):
      %m = arith.mulf %p, %q : f64
      %s = arith.addf %m, %r : f64
      %t = arith.addf %s, %q : f64
      linalg.yield %t : f64
    } -> tensor<3x4xf64>""", [3, 4])
case("sum-and-max-reductions", [("x", [3, 5], None)], """
    %z = arith.constant 0.0 : f64
    %lo = arith.constant -1.0e+300 : f64
    %e = tensor.empty() : tensor<3xf64>
    %zs = linalg.fill ins(%z : f64) outs(%e : tensor<3xf64>) -> tensor<3xf64>
    %ls = linalg.fill ins(%lo : f64) outs(%e : tensor<3xf64>) -> tensor<3xf64>
    %sum = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
        iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<3x5xf64>) outs(%zs : tensor<3xf64>) {
    ^bb0(%in: f64, %o: f64):
      %sq = arith.mulf %in, %in : f64
      %s = arith.addf %o, %sq : f64
      linalg.yield %s : f64
    } -> tensor<3xf64>
    %mx = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
        iterator_types = ["parallel", "reduction"]}
        ins(%x : tensor<3x5xf64>) outs(%ls : tensor<3xf64>) {
    ^bb0(%in: f64, %o: f64):
      %m = arith.maximumf %in, %o : f64
      linalg.yield %m : f64
    } -> tensor<3xf64>
    %y = linalg.add ins(%sum, %mx : tensor<3xf64>, tensor<3xf64>) outs(%e : tensor<3xf64>) -> tensor<3xf64>""",
     [3])
case("matmul-non-square", [("a", [3, 5], None), ("b", [5, 4], None)], """
    %z = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<3x4xf64>
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<3x4xf64>) -> tensor<3x4xf64>
    %y = linalg.matmul ins(%a, %b : tensor<3x5xf64>, tensor<5x4xf64>) outs(%f : tensor<3x4xf64>) -> tensor<3x4xf64>""",
     [3, 4])
case("batch-matmul-transpose-broadcast-named",
     [("a", [2, 3, 5], None), ("b", [2, 5, 4], None), ("c", [4, 3], None), ("d", [4], None)], """
    %z = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<2x3x4xf64>
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
    %bm = linalg.batch_matmul ins(%a, %b : tensor<2x3x5xf64>, tensor<2x5x4xf64>) outs(%f : tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
    %te = tensor.empty() : tensor<3x4xf64>
    %ct = linalg.transpose ins(%c : tensor<4x3xf64>) outs(%te : tensor<3x4xf64>) permutation = [1, 0]
    %be = tensor.empty() : tensor<2x3x4xf64>
    %cb = linalg.broadcast ins(%ct : tensor<3x4xf64>) outs(%be : tensor<2x3x4xf64>) dimensions = [0]
    %de = tensor.empty() : tensor<2x3x4xf64>
    %db = linalg.broadcast ins(%d : tensor<4xf64>) outs(%de : tensor<2x3x4xf64>) dimensions = [0, 1]
    %s = linalg.mul ins(%bm, %cb : tensor<2x3x4xf64>, tensor<2x3x4xf64>) outs(%e : tensor<2x3x4xf64>) -> tensor<2x3x4xf64>
    %y = linalg.add ins(%s, %db : tensor<2x3x4xf64>, tensor<2x3x4xf64>) outs(%e : tensor<2x3x4xf64>) -> tensor<2x3x4xf64>""",
     [2, 3, 4])
case("transposed-contraction-generic", [("a", [5, 3], None), ("b", [4, 5], None)], """
    %z = arith.constant 0.0 : f64
    %e = tensor.empty() : tensor<3x4xf64>
    %f = linalg.fill ins(%z : f64) outs(%e : tensor<3x4xf64>) -> tensor<3x4xf64>
    %y = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (k, i)>, affine_map<(i, j, k) -> (j, k)>, affine_map<(i, j, k) -> (i, j)>],
        iterator_types = ["parallel", "parallel", "reduction"]}
        ins(%a, %b : tensor<5x3xf64>, tensor<4x5xf64>) outs(%f : tensor<3x4xf64>) {
    ^bb0(%p: f64, %q: f64, %o: f64):
      %m = arith.mulf %p, %q : f64
      %s = arith.addf %o, %m : f64
      linalg.yield %s : f64
    } -> tensor<3x4xf64>""", [3, 4])

# Tensor operations.
case("slices-and-reshapes", [("x", [4, 6], None), ("w", [2, 3], None)], """
    %s = tensor.extract_slice %x[1, 0] [2, 3] [1, 2] : tensor<4x6xf64> to tensor<2x3xf64>
    %row4 = tensor.extract_slice %x[3, 1] [1, 4] [1, 1] : tensor<4x6xf64> to tensor<4xf64>
    %ins = tensor.insert_slice %w into %x[0, 3] [2, 3] [1, 1] : tensor<2x3xf64> into tensor<4x6xf64>
    %c = tensor.collapse_shape %ins [[0, 1]] : tensor<4x6xf64> into tensor<24xf64>
    %x2 = tensor.expand_shape %c [[0, 1, 2]] output_shape [2, 3, 4] : tensor<24xf64> into tensor<2x3x4xf64>
    %e = tensor.empty() : tensor<2x3x4xf64>
    %y = linalg.generic {indexing_maps = [affine_map<(i, j, k) -> (i, j, k)>, affine_map<(i, j, k) -> (i, j)>, affine_map<(i, j, k) -> (k)>, affine_map<(i, j, k) -> (i, j, k)>],
        iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%x2, %s, %row4 : tensor<2x3x4xf64>, tensor<2x3xf64>, tensor<4xf64>) outs(%e : tensor<2x3x4xf64>) {
    ^bb0(%p: f64, %q: f64, %r: f64, %o: f64):
      %m = arith.mulf %p, %q : f64
      %n = arith.addf %m, %r : f64
      linalg.yield %n : f64
    } -> tensor<2x3x4xf64>""", [2, 3, 4])
case("concat", [("a", [2, 3], None), ("b", [2, 2], None)], """
    %neg = arith.constant dense<-1.0> : tensor<2x3xf64>
    %e0 = tensor.empty() : tensor<2x3xf64>
    %na = linalg.mul ins(%a, %neg : tensor<2x3xf64>, tensor<2x3xf64>) outs(%e0 : tensor<2x3xf64>) -> tensor<2x3xf64>
    %ab = tensor.concat dim(1) %na, %b, %a : (tensor<2x3xf64>, tensor<2x2xf64>, tensor<2x3xf64>) -> tensor<2x8xf64>
    %e = tensor.empty() : tensor<2x8xf64>
    %y = linalg.mul ins(%ab, %ab : tensor<2x8xf64>, tensor<2x8xf64>) outs(%e : tensor<2x8xf64>) -> tensor<2x8xf64>""", [2, 8])
case("embedding-gather-repeated-ids", [("table", [5, 3], None), ("pos", [4, 3], None)], """
    %e = tensor.empty() : tensor<2x4x3xf64>
    %y = linalg.generic {indexing_maps = [affine_map<(b, s, d) -> (b, s)>, affine_map<(b, s, d) -> (s, d)>, affine_map<(b, s, d) -> (b, s, d)>],
        iterator_types = ["parallel", "parallel", "parallel"]}
        ins(%ids, %pos : tensor<2x4xi64>, tensor<4x3xf64>) outs(%e : tensor<2x4x3xf64>) {
    ^bb0(%id: i64, %p: f64, %o: f64):
      %i = arith.index_cast %id : i64 to index
      %d = linalg.index 2 : index
      %w = tensor.extract %table[%i, %d] : tensor<5x3xf64>
      %m = arith.mulf %w, %w : f64
      %s = arith.addf %m, %p : f64
      linalg.yield %s : f64
    } -> tensor<2x4x3xf64>""", [2, 4, 3],
     batch=[("ids", [2, 4], "i64", lambda rng: np.array([[0, 2, 2, 4], [1, 2, 0, 0]]))])
for red in ["mean", "sum", "none"]:
    case(f"cross-entropy-{red}-with-ignored", [("logits", [6, 5], None)], f"""
    %y = train.cross_entropy {red} %logits, %labels ignore_index = -100
        : (tensor<6x5xf64>, tensor<6xi64>) -> {t([6] if red == 'none' else [])}""",
         [6] if red == "none" else [],
         batch=[("labels", [6], "i64", lambda rng: np.array([0, 4, -100, 2, -100, 1]))])
case("checkpoint-region", [("x", [3, 4], away_from_zero), ("w", [4, 4], None)], """
    %h = train.checkpoint (%x, %w : tensor<3x4xf64>, tensor<4x4xf64>) -> tensor<3x4xf64> {
    ^bb0(%cx: tensor<3x4xf64>, %cw: tensor<4x4xf64>):
      %z = arith.constant 0.0 : f64
      %e = tensor.empty() : tensor<3x4xf64>
      %f = linalg.fill ins(%z : f64) outs(%e : tensor<3x4xf64>) -> tensor<3x4xf64>
      %m = linalg.matmul ins(%cx, %cw : tensor<3x4xf64>, tensor<4x4xf64>) outs(%f : tensor<3x4xf64>) -> tensor<3x4xf64>
""" + ew("t", [("%m", "f64")], [3, 4], """
      %th = math.tanh %in0 : f64
      linalg.yield %th : f64""").replace("\n    ", "\n      ") + """
      train.yield %t : tensor<3x4xf64>
    }
""" + ew("y", [("%h", "f64"), ("%x", "f64")], [3, 4], """
      %m = arith.mulf %in0, %in1 : f64
      linalg.yield %m : f64"""), [3, 4])

# Convolutions: the weight through the generic rule, the input through the
# transposed convolution (ConvRules.cpp), with strides, dilations, kernel
# sizes that leave input positions unread, and groups.
def conv(name, op, x, w, y, attrs):
    case(name, [("x", x, None), ("w", w, None)], f"""
    %z = arith.constant 0.0 : f64
    %e = tensor.empty() : {t(y)}
    %f = linalg.fill ins(%z : f64) outs(%e : {t(y)}) -> {t(y)}
    %c = linalg.{op} {attrs} ins(%x, %w : {t(x)}, {t(w)}) outs(%f : {t(y)}) -> {t(y)}
""" + ew("y", [("%c", "f64")], y, """
      %th = math.tanh %in0 : f64
      linalg.yield %th : f64"""), y)


conv("conv2d-nchw-stride2-dilation2", "conv_2d_nchw_fchw", [2, 3, 9, 8],
     [4, 3, 2, 3], [2, 4, 4, 2],
     "{dilations = dense<2> : vector<2xi64>, strides = dense<2> : vector<2xi64>}")
conv("conv2d-nchw-stride-3-1", "conv_2d_nchw_fchw", [2, 2, 8, 5],
     [3, 2, 3, 2], [2, 3, 2, 4],
     "{dilations = dense<1> : vector<2xi64>, strides = dense<[3, 1]> : vector<2xi64>}")
conv("conv1d-ncw-dilation2", "conv_1d_ncw_fcw", [2, 4, 16], [3, 4, 2],
     [2, 3, 14],
     "{dilations = dense<2> : vector<1xi64>, strides = dense<1> : vector<1xi64>}")
conv("conv2d-grouped", "conv_2d_ngchw_gfchw", [2, 2, 2, 6, 6],
     [2, 3, 2, 3, 3], [2, 2, 3, 2, 2],
     "{dilations = dense<1> : vector<2xi64>, strides = dense<2> : vector<2xi64>}")


def build(c):
    params = c["params"]
    # Batch operands need a (common) batch dimension: a 0-d y is weighted by
    # sum(w) with w as long as the other batch operands.
    wshape = c["y_shape"] or [c["batch"][0][1][0] if c["batch"] else 1]
    batch = c["batch"] + [("ga_weights", wshape, "f64", None)]
    ptypes = [t(s) for _, s, _ in params]
    btypes = [t(s, e) for _, s, e, _ in batch]
    rank = len(wshape)
    dims = ", ".join(f"d{i}" for i in range(rank))
    m = f"affine_map<({dims}) -> ({dims})>"
    z = f"affine_map<({dims}) -> ()>"
    ym = m if c["y_shape"] else z
    fargs = ", ".join(f"%a_{n}: {ty}" for (n, _, _), ty in
                      zip(params, ptypes)) + ", " + \
        ", ".join(f"%a_{n}: {ty}" for (n, _, _, _), ty in zip(batch, btypes))
    bargs = ", ".join(f"%{n}: {ty}" for (n, _, _), ty in zip(params, ptypes)) \
        + ", " + ", ".join(f"%{n}: {ty}" for (n, _, _, _), ty in zip(batch, btypes))
    return f"""func.func @{c['name'].replace('-', '_')}({fargs})
    -> (tensor<f64>, {", ".join(ptypes)}) {{
  %loss, %g:{len(params)} = train.step
      params({", ".join(f"%a_{n}" for n, _, _ in params)} : {", ".join(ptypes)})
      batch({", ".join(f"%a_{n}" for n, _, _, _ in batch)} : {", ".join(btypes)})
      -> tensor<f64> grads({", ".join(ptypes)}) {{
  ^bb0({bargs}):
{c['body']}
    %lz = arith.constant 0.0 : f64
    %le = tensor.empty() : tensor<f64>
    %lf = linalg.fill ins(%lz : f64) outs(%le : tensor<f64>) -> tensor<f64>
    %l = linalg.generic {{indexing_maps = [{ym}, {m}, {z}],
        iterator_types = [{", ".join(['"reduction"'] * rank)}]}}
        ins(%y, %ga_weights : {t(c['y_shape'])}, {t(wshape)}) outs(%lf : tensor<f64>) {{
    ^bb0(%yv: f64, %rv: f64, %acc: f64):
      %ga_p = arith.mulf %yv, %rv : f64
      %ga_s = arith.addf %acc, %ga_p : f64
      linalg.yield %ga_s : f64
    }} -> tensor<f64>
    train.yield %l : tensor<f64>
  }}
  return %loss, {", ".join(f"%g#{i}" for i in range(len(params)))}
      : tensor<f64>, {", ".join(ptypes)}
}}
"""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ga-run", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--only")
    parser.add_argument("--print-ir", action="store_true")
    args = parser.parse_args()
    check = Checker("ad-rules")
    for c in CASES:
        if args.only and c["name"] != args.only:
            continue
        workdir = os.path.join(args.workdir, c["name"])
        os.makedirs(workdir, exist_ok=True)
        path = os.path.join(workdir, "case.mlir")
        with open(path, "w") as f:
            f.write(build(c))
        if args.print_ir:
            print(build(c))
        rng = np.random.default_rng(zlib.crc32(c["name"].encode()))
        params = [(gen or (lambda s, r: r.standard_normal(s)))(shape, rng)
                  for _, shape, gen in c["params"]]
        batch = [gen(rng).astype(np.int64) if gen else
                 rng.standard_normal(shape) for _, shape, _, gen in c["batch"]]
        batch.append(rng.standard_normal(
            c["y_shape"] or [c["batch"][0][1][0] if c["batch"] else 1]))
        flags = c["flags"]
        res, _ = run_ga_run(args.ga_run, path, params + batch,
                            os.path.join(workdir, "grad"), extra=flags)
        eps = c["eps"]
        for i, (name, shape, _) in enumerate(c["params"]):
            v = rng.standard_normal(shape)
            lp = run_ga_run(args.ga_run, path,
                            params[:i] + [params[i] + eps * v] +
                            params[i + 1:] + batch,
                            os.path.join(workdir, f"plus{i}"),
                            extra=flags)[0][0]
            lm = run_ga_run(args.ga_run, path,
                            params[:i] + [params[i] - eps * v] +
                            params[i + 1:] + batch,
                            os.path.join(workdir, f"minus{i}"),
                            extra=flags)[0][0]
            fd = (float(lp) - float(lm)) / (2 * eps)
            ad = float(np.sum(res[1 + i] * v))
            rtol, atol = c["tol"]
            check.close(f"{c['name']}: d/d{name}", ad, fd, rtol=rtol,
                        atol=atol)
    check.finish()


if __name__ == "__main__":
    main()
