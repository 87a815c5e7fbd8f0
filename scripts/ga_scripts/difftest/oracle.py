"""The oracle: each operation evaluated in NumPy (float64 where the
program computes in floats), sharing no code with the compiler."""


import numpy as np

from .program import (BF16_EPS, F32_EPS, NP_TYPES, TRANSCENDENTAL_ULPS,
                      Value, eps_of)


# Evaluation (the oracle) and emission, per kind.

UNARY = {
    # name: (float64 function, error bound (x, mag, err, eps), MLIR body)
    "neg": (lambda x: -x, lambda m, e, u: e, ["%r = arith.negf %a : T"]),
    "abs": (np.abs, lambda m, e, u: e, ["%r = math.absf %a : T"]),
    "tanh": (np.tanh, lambda m, e, u: e + TRANSCENDENTAL_ULPS * u,
             ["%r = math.tanh %a : T"]),
    "sqrtabs1": (lambda x: np.sqrt(np.abs(x) + 1),
                 lambda m, e, u: e / 2 + 3 * u * np.sqrt(m + 1),
                 ["%t0 = math.absf %a : T", "%t1 = arith.addf %t0, %one : T",
                  "%r = math.sqrt %t1 : T"]),
    "expnegabs": (lambda x: np.exp(-np.abs(x)),
                  lambda m, e, u: e + TRANSCENDENTAL_ULPS * u,
                  ["%t0 = math.absf %a : T", "%t1 = arith.negf %t0 : T",
                   "%r = math.exp %t1 : T"]),
    "scale": (lambda x: x * 0.75, lambda m, e, u: 0.75 * e + u * 0.75 * m,
              ["%r = arith.mulf %a, %c075 : T"]),
}

BINARY = {
    "add": (lambda a, b: a + b,
            lambda ma, mb, ea, eb, u: ea + eb + u * (ma + mb),
            ["%r = arith.addf %a, %b : T"]),
    "sub": (lambda a, b: a - b,
            lambda ma, mb, ea, eb, u: ea + eb + u * (ma + mb),
            ["%r = arith.subf %a, %b : T"]),
    "mul": (lambda a, b: a * b,
            lambda ma, mb, ea, eb, u: ea * mb + eb * ma + ea * eb
            + u * ma * mb, ["%r = arith.mulf %a, %b : T"]),
    "max": (np.maximum, lambda ma, mb, ea, eb, u: np.maximum(ea, eb),
            ["%r = arith.maximumf %a, %b : T"]),
    "min": (np.minimum, lambda ma, mb, ea, eb, u: np.maximum(ea, eb),
            ["%r = arith.minimumf %a, %b : T"]),
    "divabs1": (lambda a, b: a / (np.abs(b) + 1),
                lambda ma, mb, ea, eb, u: ea + ma * eb + 3 * u * ma,
                ["%t0 = math.absf %b : T", "%t1 = arith.addf %t0, %one : T",
                 "%r = arith.divf %a, %t1 : T"]),
}


def magnitude(v):
    return np.abs(np.asarray(v.ref, np.float64))


def evaluate(prog):
    """Runs the oracle over `prog`, filling prog.values."""
    vals = {a.name: a for a in prog.args}
    for op in prog.ops:
        ins = [vals[n] for n in op.operands]
        vals[op.result] = EVAL[op.kind](op, ins)
    prog.values = vals
    return vals


def read_through(v, shape, mapping):
    """v's values at every index of `shape` (the loop space), v read
    through `mapping` (the loop dimension of each of v's dimensions)."""
    idx = np.indices(shape) if shape else np.zeros((0,), int)
    sel = tuple(idx[d] for d in mapping)
    ref = np.asarray(v.ref)[sel] if mapping else np.broadcast_to(
        np.asarray(v.ref), shape)
    err = np.asarray(v.err)[sel] if mapping else np.broadcast_to(
        np.asarray(v.err), shape)
    return ref, err


def eval_unary(op, ins):
    (a,) = ins
    f, bound, _ = UNARY[op.params["fn"]]
    ref = f(np.asarray(a.ref, np.float64))
    u = eps_of(a.dtype)
    err = bound(magnitude(a), a.err, u)
    return Value(op.result, a.shape, a.dtype, ref, err)


def eval_binary(op, ins):
    a, b = ins
    shape = a.shape
    bref, berr = read_through(b, shape, op.params["bmap"])
    f, bound, _ = BINARY[op.params["fn"]]
    ref = f(np.asarray(a.ref, np.float64), bref)
    err = bound(magnitude(a), np.abs(bref), a.err, berr, eps_of(a.dtype))
    return Value(op.result, shape, a.dtype, ref, err)


def eval_reduce(op, ins):
    (a,) = ins
    d = op.params["dim"]
    n = a.shape[d]
    ref = np.asarray(a.ref, np.float64)
    if op.params["fn"] == "sum":
        out = ref.sum(axis=d)
        err = a.err.sum(axis=d) + n * eps_of(a.dtype) * magnitude(a).sum(
            axis=d)
    else:
        out = ref.max(axis=d)
        err = a.err.max(axis=d)
    shape = a.shape[:d] + a.shape[d + 1:]
    return Value(op.result, shape, a.dtype, np.asarray(out), np.asarray(err))


def eval_compare(op, ins):
    (a,) = ins
    ref = np.asarray(a.ref)
    c = op.params["threshold"]
    out = ref > c if op.params["pred"] == "gt" else ref < c
    return Value(op.result, a.shape, "i1", out, exact=True)


def eval_logic(op, ins):
    fn = op.params["fn"]
    a = np.asarray(ins[0].ref, bool)
    if fn == "not":
        out = ~a
    else:
        b = np.asarray(ins[1].ref, bool)
        out = {"and": a & b, "or": a | b, "xor": a ^ b}[fn]
    return Value(op.result, ins[0].shape, "i1", out, exact=True)


def eval_select(op, ins):
    m, a, b = ins
    shape = m.shape
    bref, berr = read_through(b, shape, op.params["bmap"])
    out = np.where(np.asarray(m.ref, bool), np.asarray(a.ref, np.float64),
                   bref)
    err = np.where(np.asarray(m.ref, bool), a.err, berr)
    return Value(op.result, shape, a.dtype, out, err)


def eval_int_binary(op, ins):
    a, b = ins
    x, y = np.asarray(a.ref, np.int64), np.asarray(b.ref, np.int64)
    out = NARROW_INT_FNS[op.params["fn"]](x, y)
    return Value(op.result, a.shape, a.dtype, out, exact=True)


def eval_int_to_float(op, ins):
    (a,) = ins
    return Value(op.result, a.shape, op.params["to"],
                 np.asarray(a.ref, np.float64), exact=True)


def bf16_round(x):
    """float32(x) rounded to the nearest bfloat16, ties to even."""
    bits = np.atleast_1d(np.asarray(x, np.float32)).view(np.uint32).astype(
        np.uint64)
    u = np.uint64
    bits = (bits + u(0x7FFF) + ((bits >> u(16)) & u(1))) & u(0xFFFF0000)
    out = bits.astype(np.uint32).view(np.float32).astype(np.float64)
    return out.reshape(np.shape(x))


def eval_float_cast(op, ins):
    (a,) = ins
    to = op.params["to"]
    m = magnitude(a)
    if to == "bf16":  # f32 -> bf16 -> f32: one bfloat16 rounding
        ref = np.asarray(a.ref, np.float64)
        return Value(op.result, a.shape, a.dtype, bf16_round(ref),
                     a.err + BF16_EPS * (m + a.err))
    err = a.err + (F32_EPS * m if to == "f32" else 0)
    return Value(op.result, a.shape, to, np.asarray(a.ref, np.float64), err)


def eval_gather(op, ins):
    table, idx = ins
    V = table.shape[0]
    i = np.clip(np.asarray(idx.ref, np.int64), 0, V - 1)
    return Value(op.result, (idx.shape[0],) + table.shape[1:], table.dtype,
                 np.asarray(table.ref, np.float64)[i], np.asarray(table.err)[i])


def eval_matmul(op, ins):
    """matmul [M, K] x [K, N], or batch_matmul [Bt, M, K] x [Bt, K, N]."""
    a, b = ins
    A, B = np.asarray(a.ref, np.float64), np.asarray(b.ref, np.float64)
    K = a.shape[-1]
    ma, mb = magnitude(a), magnitude(b)
    err = (a.err @ mb + ma @ b.err + a.err @ b.err
           + K * eps_of(a.dtype) * (ma @ mb))
    return Value(op.result, a.shape[:-1] + b.shape[-1:], a.dtype, A @ B, err)


def eval_transpose(op, ins):
    (a,) = ins
    perm = op.params["perm"]
    return Value(op.result, tuple(a.shape[p] for p in perm), a.dtype,
                 np.transpose(np.asarray(a.ref), perm),
                 np.transpose(np.asarray(a.err), perm), exact=a.exact)


def eval_reshape(op, ins):
    (a,) = ins
    shape = op.params["shape"]
    return Value(op.result, shape, a.dtype, np.asarray(a.ref).reshape(shape),
                 np.asarray(a.err).reshape(shape), exact=a.exact)


def eval_slice(op, ins):
    (a,) = ins
    sl = tuple(slice(o, o + s) for o, s in zip(op.params["offsets"],
                                               op.params["sizes"]))
    return Value(op.result, op.params["sizes"], a.dtype,
                 np.asarray(a.ref)[sl], np.asarray(a.err)[sl],
                 exact=a.exact)


def eval_accumulate(op, ins):
    acc, g = ins
    ma, mg = magnitude(acc), magnitude(g)
    return Value(op.result, acc.shape, acc.dtype,
                 np.asarray(acc.ref, np.float64) + np.asarray(g.ref,
                                                              np.float64),
                 acc.err + g.err + eps_of(acc.dtype) * (ma + mg))


NARROW_EPS = {"f16": 2.0 ** -11, "bf16": 2.0 ** -8}
# The spacing of float16's subnormals: a rounding to float16 near zero errs
# by up to half of it whatever the magnitude.
F16_TINY = 2.0 ** -25
NARROW_FNS = {"add": "arith.addf", "mul": "arith.mulf",
              "max": "arith.maximumf"}


def eval_narrow(op, ins):
    """f32 operands rounded to f16 or bf16 tensors, combined in that type
    (one rounding), widened back to f32 (exact)."""
    a, b = ins
    to, fn = op.params["to"], op.params["fn"]
    u = NARROW_EPS[to]
    tiny = F16_TINY if to == "f16" else 0.0
    ma, mb = magnitude(a), magnitude(b)
    ea = a.err + u * (ma + a.err) + tiny
    eb = b.err + u * (mb + b.err) + tiny
    ra, rb = np.asarray(a.ref, np.float64), np.asarray(b.ref, np.float64)
    if fn == "add":
        ref = ra + rb
        err = ea + eb + u * (ma + mb + ea + eb) + tiny
    elif fn == "mul":
        ref = ra * rb
        err = ea * mb + eb * ma + ea * eb + u * (ma + ea) * (mb + eb) + tiny
    else:
        ref = np.maximum(ra, rb)
        err = np.maximum(ea, eb)
    return Value(op.result, a.shape, a.dtype, ref, err)


def wrap_i8(x):
    return ((np.asarray(x, np.int64) + 128) % 256) - 128


INT_ARITH = {"add": "arith.addi", "sub": "arith.subi", "mul": "arith.muli",
             "max": "arith.maxsi"}
NARROW_INT_FNS = {"add": lambda x, y: x + y, "sub": lambda x, y: x - y,
                  "mul": lambda x, y: x * y, "max": np.maximum}


def eval_narrow_int(op, ins):
    """Integers truncated to i8 tensors (wrapping), combined in i8
    (wrapping), sign-extended back: exact."""
    a, b = ins
    x, y = wrap_i8(a.ref), wrap_i8(b.ref)
    out = wrap_i8(NARROW_INT_FNS[op.params["fn"]](x, y))
    return Value(op.result, a.shape, a.dtype,
                 out.astype(NP_TYPES[a.dtype]), exact=True)


def eval_cross_entropy(op, ins):
    """train.cross_entropy (sum or mean over the labels that are not -100)
    of logits [N, V]. Bound per row: the logits' own errors (twice: the
    log-sum-exp and the picked logit) and (V + 64) units of rounding of the
    row's magnitudes (V terms summed, exp and log possibly approximated to
    16 units each)."""
    logits, labels = ins
    N, V = logits.shape
    L = np.asarray(logits.ref, np.float64)
    y = np.asarray(labels.ref, np.int64)
    valid = y != -100
    m = L.max(axis=1)
    lse = np.log(np.exp(L - m[:, None]).sum(axis=1)) + m
    picked = L[np.arange(N), np.where(valid, y, 0)]
    row = (lse - picked) * valid
    u = eps_of(logits.dtype)
    row_err = (2 * np.asarray(logits.err).max(axis=1)
               + (V + 64) * u * (1 + np.abs(lse) + np.abs(picked)
                                 + np.abs(L).max(axis=1))) * valid
    total = row.sum()
    err = row_err.sum() + N * u * np.abs(row).sum()
    if op.params["reduction"] == "mean":
        n = max(int(valid.sum()), 1)
        total, err = total / n, err / n + u * abs(total / n)
    return Value(op.result, (), logits.dtype, np.asarray(total),
                 np.asarray(err))


EVAL = {"accumulate": eval_accumulate, "unary": eval_unary, "binary": eval_binary, "reduce": eval_reduce,
        "compare": eval_compare, "logic": eval_logic, "select": eval_select,
        "int_binary": eval_int_binary, "int_to_float": eval_int_to_float,
        "float_cast": eval_float_cast, "gather": eval_gather,
        "matmul": eval_matmul, "transpose": eval_transpose,
        "reshape": eval_reshape, "slice": eval_slice,
        "narrow": eval_narrow, "narrow_int": eval_narrow_int,
        "batch_matmul": eval_matmul,
        "cross_entropy": eval_cross_entropy}
