#!/usr/bin/python3
"""Differential testing of ga-opt: random programs, run in configurations
that must agree, against an oracle that shares no code with the compiler.

  scripts/difftest.py --seed S --count N [--bundle B] [--configs a,b,...]
                      [--build DIR] [--workdir DIR] [--keep-going]

Programs. A generator writes random valid functions in the subset ga-opt
compiles: linalg.generic with parallel and reduction iterators (and
generics that add into their init, as differentiation writes), operands
read through broadcasts (maps that drop dimensions) and transposes, gathers
(tensor.extract at a clamped index read from an integer tensor, beside
linalg.index), i1 masks (compares, and/or/xor, select), integer and float
element types (i1, i32, i64, f32, f64; i8, f16 and bf16 as tensors of
their own between a narrowing and a widening, combined in that type, and
bf16 as a rounding step), element type conversions, tensor.collapse_shape /
expand_shape, extract_slice, linalg.transpose, linalg.matmul,
linalg.batch_matmul and train.cross_entropy (sum and mean over labels with
-100 padding). Arguments and results include i1
tensors (NumPy bool). B programs (default 8) share one function, so that one
compilation covers them; each result belongs to one program.

Oracle. Every program is evaluated by NumPy in float64 (integers and masks
exactly), and every float value carries an elementwise bound on the
rounding error a float32 (or float64, or bfloat16) evaluation may have
accumulated: the inputs' bounds propagated through each operation plus its
own rounding (one unit in the last place of the result for +, -, *, /,
sqrt and conversions; 16 for exp and tanh, which the pipeline may
approximate; n units of the sum of magnitudes for a sum of n terms; K units
of |A| |B| for a product over K). A float result passes when every element
is within twice its bound of the float64 value; integers and masks must be
equal. Compares, float-to-integer conversions and gathers only read values
that the float32 and float64 evaluations share exactly (arguments and
integer values), so that no rounding can flip them.

Configurations (each: ga-opt --ga-pipeline=OPTIONS, then ga-run, except
aot):
  cpu            target=cpu (the default pipeline)
  cpu-scalar     target=cpu vectorize=false
  cpu-unfused    target=cpu fuse=false
  cpu-threads    target=cpu, ga-run --num-threads=2
  cuda-emulated  target=cuda gpu-emulate=true gpu-split-reductions=false
                 (the CUDA device program, run on the CPU)
  aot            ga-compile (target cpu) + ga-exec
Every configuration is checked against the oracle. Pairs that must agree
bit for bit: cpu with cpu-threads and with aot (the same code, another
thread count or loader); cpu with cpu-unfused (fusion keeps every scalar
operation of the producer and consumer); cpu-scalar with cuda-emulated (the
device program of scalar loops in the CPU's order). cpu against cpu-scalar
is held to the oracle's bound only: vector contractions use fused
multiply-adds, the scalar loops a multiply and an add.

Training steps (--steps N). Random train.steps: tokens [B, S, D] through
one or two layers (a matmul, an optional bias, tanh, identity or a scale)
to logits and a mean cross-entropy whose labels are -100 at random and
for one whole example. The oracle: the loss within 1e-5 of a float64
forward, the valid count exact, each gradient within a relative norm error
of 1e-5 of central finite differences of that forward (measured: at most
1.4e-7). Configurations:
  k=1            the CPU pipeline, one micro-batch: against the oracle
  k=2, k=4       micro-batches: bitwise k=1, as the split promises
  aot, python    ga-compile, then ga-exec or the Python binding: bitwise
  remat          memory-budget = 70% of the measured peak (or the smallest
                 peak the planner reaches, where it refuses 70%): bitwise
                 k=1 (recomputation repeats the same operations), and the
                 measured peak within the budget
  chunked        loss-chunk-rows = a third of the rows: gradients and
                 count bitwise, the loss within 1e-6 relative (the chunks'
                 sums group the same float32 terms otherwise)
  ranks2         data_parallel = 2 under mpirun (--mpirun): against the
                 oracle (the ranks' sums are added in another order)
  cuda-emulated  the CUDA device program on the CPU: against the oracle

The corpus (--corpus [PATH...]; default: examples/ and test/). Every
public function with static tensor arguments of every .mlir file (each
`// -----` chunk apart) that the default CPU pipeline compiles and runs, on
random inputs (floats in [0.05, 1], which are valid optimizer states too;
a file with `// difftest-floats: normal STDDEV` gets normal floats instead,
integers 0 and 1, which are valid labels and indices for every model), in every configuration: the bitwise pairs
above bit for bit, and every configuration within a relative 1e-4 of the
largest magnitude of `cpu`'s result (hand-written programs have no oracle
here; the same float32 terms summed in another order or contracted into
fused multiply-adds differ by far less). Chunks that do not run on the CPU
pipeline (inputs meant to be refused, steps for several ranks) are counted
apart.

Mismatches. Each mismatch is minimized (delta debugging on the program:
other programs and results dropped, then operations replaced by arguments
holding their float64 values, as long as the mismatch stays) and written
to the work directory as a standalone .mlir with its inputs (.npy), its
two configurations and values. Exit status 1 when any mismatch was found.
"""

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

F32_EPS = 2.0 ** -24
F64_EPS = 2.0 ** -53
BF16_EPS = 2.0 ** -8
TRANSCENDENTAL_ULPS = 16
DIMS = [1, 3, 4, 6, 8, 12, 16]
FLOATS = ["f32", "f32", "f32", "f64"]
INTS = ["i32", "i64"]
NP_TYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
            "i64": np.int64, "i1": np.bool_}

CONFIGS = {
    "cpu": ("target=cpu", []),
    "cpu-scalar": ("target=cpu vectorize=false", []),
    "cpu-unfused": ("target=cpu fuse=false", []),
    "cpu-threads": ("target=cpu", ["--num-threads=2"]),
    "cuda-emulated": (
        "target=cuda gpu-emulate=true gpu-split-reductions=false", []),
    "aot": ("target=cpu", None),
}
BITWISE_PAIRS = [("cpu", "cpu-threads"), ("cpu", "aot"),
                 ("cpu", "cpu-unfused"), ("cpu-scalar", "cuda-emulated")]


def eps_of(dtype):
    return F64_EPS if dtype == "f64" else F32_EPS


class Value:
    """An SSA value of a program: its type and its oracle (float64 values,
    or exact integers and booleans, and for floats the error bound)."""

    def __init__(self, name, shape, dtype, ref, err=None, exact=False):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.ref = ref
        self.err = err if err is not None else np.zeros(self.shape)
        # Exact: the float32 evaluation computes this value without
        # rounding (arguments, converted small integers).
        self.exact = exact

    @property
    def is_float(self):
        return self.dtype in ("f32", "f64")

    def type(self):
        dims = "x".join(str(d) for d in self.shape)
        return f"tensor<{dims}x{self.dtype}>" if dims else \
            f"tensor<{self.dtype}>"


class Op:
    """One operation: `kind`, operand names, result name, parameters."""

    def __init__(self, kind, operands, result, **params):
        self.kind, self.operands, self.result = kind, list(operands), result
        self.params = params


class Program:
    def __init__(self):
        self.args = []      # Values (with .ref as the input array)
        self.ops = []
        self.results = []   # names
        self.values = {}    # name -> Value (after evaluate)


def affine(rank, exprs):
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({', '.join(exprs)})>"


# --------------------------------------------------------------------------
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


def emit_op(op, vals, p):
    """MLIR lines of `op` (names prefixed with %`p`)."""
    n = lambda name: f"%{p}{name}"
    ins = [vals[o] for o in op.operands]
    out = vals[op.result]
    r, T = n(op.result), out.type()
    k = op.kind
    lines = []

    def generic(inputs, maps, iterators, body, init=None, result=None):
        """A linalg.generic into `result` (a Value; default: the op's
        result), from `init` or an empty tensor of its own."""
        res = result or out
        name, rtype = n(res.name), res.type()
        init_name = init or f"{name}_e"
        if not init:
            lines.append(f"{init_name} = tensor.empty() : {rtype}")
        names = [n(x.name) for x in inputs]
        types = [x.type() for x in inputs]
        all_maps = ", ".join(maps)
        its = ", ".join(f'"{i}"' for i in iterators)
        args = ", ".join(f"%in{i}: {x.dtype}" for i, x in enumerate(inputs))
        args = (args + ", " if args else "") + f"%out: {res.dtype}"
        ins_txt = (f" ins({', '.join(names)} : {', '.join(types)})"
                   if inputs else "")
        lines.append(f"{name} = linalg.generic {{indexing_maps = "
                     f"[{all_maps}], iterator_types = [{its}]}}{ins_txt}"
                     f" outs({init_name} : {rtype}) {{")
        lines.append(f"^bb0({args}):")
        lines.extend("  " + b for b in body)
        lines.append(f"}} -> {rtype}")

    rank = len(out.shape)
    ident = affine(rank, [f"d{i}" for i in range(rank)])
    if k == "unary":
        fn = op.params["fn"]
        body = [l.replace("%a", "%in0").replace("T", out.dtype)
                .replace("%one", "%cone").replace("%c075", "%cscale")
                for l in UNARY[fn][2]]
        consts = [f"%cone = arith.constant 1.0 : {out.dtype}",
                  f"%cscale = arith.constant 0.75 : {out.dtype}"]
        generic(ins, [ident, ident], ["parallel"] * rank,
                consts + body + ["linalg.yield %r : " + out.dtype])
    elif k == "binary":
        bmap = affine(rank, [f"d{d}" for d in op.params["bmap"]])
        body = [l.replace("%a", "%in0").replace("%b", "%in1")
                .replace("T", out.dtype).replace("%one", "%cone")
                for l in BINARY[op.params["fn"]][2]]
        generic(ins, [ident, bmap, ident], ["parallel"] * rank,
                [f"%cone = arith.constant 1.0 : {out.dtype}"] + body
                + ["linalg.yield %r : " + out.dtype])
    elif k == "accumulate":
        # acc + g computed into acc (the init, read by the body): how
        # differentiation adds a second contribution to an adjoint.
        acc, g = ins
        generic([g], [ident, ident], ["parallel"] * rank,
                [f"%r = arith.addf %out, %in0 : {out.dtype}",
                 f"linalg.yield %r : {out.dtype}"], init=n(acc.name))
    elif k == "reduce":
        (a,) = ins
        d = op.params["dim"]
        ar = len(a.shape)
        fn = op.params["fn"]
        init = "0.0" if fn == "sum" else \
            ("0xFF800000" if a.dtype == "f32" else "0xFFF0000000000000")
        lines.append(f"{r}_c = arith.constant {init} : {a.dtype}")
        lines.append(f"{r}_e = tensor.empty() : {T}")
        lines.append(f"{r}_f = linalg.fill ins({r}_c : {a.dtype}) "
                     f"outs({r}_e : {T}) -> {T}")
        its = ["reduction" if i == d else "parallel" for i in range(ar)]
        omap = affine(ar, [f"d{i}" for i in range(ar) if i != d])
        comb = "arith.addf" if fn == "sum" else "arith.maximumf"
        generic(ins, [affine(ar, [f"d{i}" for i in range(ar)]), omap], its,
                [f"%r = {comb} %out, %in0 : {a.dtype}",
                 f"linalg.yield %r : {a.dtype}"], init=f"{r}_f")
    elif k == "compare":
        (a,) = ins
        c = op.params["threshold"]
        if a.is_float:
            cmp = f"arith.cmpf {'ogt' if op.params['pred'] == 'gt' else 'olt'}"
            cst = f"%c = arith.constant {float(c)!r} : {a.dtype}"
        else:
            cmp = f"arith.cmpi {'sgt' if op.params['pred'] == 'gt' else 'slt'}"
            cst = f"%c = arith.constant {int(c)} : {a.dtype}"
        generic(ins, [ident, ident], ["parallel"] * rank,
                [cst, f"%r = {cmp}, %in0, %c : {a.dtype}",
                 "linalg.yield %r : i1"])
    elif k == "logic":
        fn = op.params["fn"]
        if fn == "not":
            body = ["%t = arith.constant true",
                    "%r = arith.xori %in0, %t : i1"]
        else:
            body = [f"%r = arith.{fn}i %in0, %in1 : i1"]
        generic(ins, [ident] * (len(ins) + 1), ["parallel"] * rank,
                body + ["linalg.yield %r : i1"])
    elif k == "select":
        bmap = affine(rank, [f"d{d}" for d in op.params["bmap"]])
        if op.params.get("extract"):
            # The first value read through tensor.extract at the loop's
            # indices (a body that stays scalar, as front ends write
            # gathers).
            m, a, b = ins
            idx = [f"%j{i}" for i in range(rank)]
            body = [f"%j{i} = linalg.index {i} : index" for i in range(rank)]
            body += [f"%x = tensor.extract {n(a.name)}[{', '.join(idx)}] : "
                     f"{a.type()}",
                     f"%r = arith.select %in0, %x, %in1 : {out.dtype}",
                     f"linalg.yield %r : {out.dtype}"]
            generic([m, b], [ident, bmap, ident], ["parallel"] * rank, body)
        else:
            generic(ins, [ident, ident, bmap, ident], ["parallel"] * rank,
                    [f"%r = arith.select %in0, %in1, %in2 : {out.dtype}",
                     f"linalg.yield %r : {out.dtype}"])
    elif k == "int_binary":
        generic(ins, [ident] * 3, ["parallel"] * rank,
                [f"%r = {INT_ARITH[op.params['fn']]} %in0, %in1 : "
                 f"{out.dtype}",
                 f"linalg.yield %r : {out.dtype}"])
    elif k == "int_to_float":
        generic(ins, [ident] * 2, ["parallel"] * rank,
                [f"%r = arith.sitofp %in0 : {ins[0].dtype} to {out.dtype}",
                 f"linalg.yield %r : {out.dtype}"])
    elif k == "float_cast":
        a = ins[0]
        to = op.params["to"]
        if to == "bf16":
            body = [f"%t = arith.truncf %in0 : {a.dtype} to bf16",
                    f"%r = arith.extf %t : bf16 to {a.dtype}"]
        elif to == "f64":
            body = [f"%r = arith.extf %in0 : {a.dtype} to f64"]
        else:
            body = [f"%r = arith.truncf %in0 : {a.dtype} to f32"]
        generic(ins, [ident] * 2, ["parallel"] * rank,
                body + [f"linalg.yield %r : {out.dtype}"])
    elif k == "gather":
        table, idx = ins
        V = table.shape[0]
        tr = len(table.shape)
        extra = ", ".join(f"%j{i}" for i in range(1, tr))
        body = [f"%c0 = arith.constant 0 : {idx.dtype}",
                f"%cv = arith.constant {V - 1} : {idx.dtype}",
                f"%lo = arith.maxsi %in0, %c0 : {idx.dtype}",
                f"%hi = arith.minsi %lo, %cv : {idx.dtype}",
                "%i = arith.index_cast %hi : " + idx.dtype + " to index"]
        body += [f"%j{i} = linalg.index {i} : index" for i in range(1, tr)]
        body += [f"%r = tensor.extract {n(table.name)}[%i"
                 + (", " + extra if extra else "") + f"] : {table.type()}",
                 f"linalg.yield %r : {out.dtype}"]
        generic([idx], [affine(rank, ["d0"]), ident], ["parallel"] * rank,
                body)
    elif k in ("matmul", "batch_matmul"):
        lines.append(f"{r}_c = arith.constant 0.0 : {out.dtype}")
        lines.append(f"{r}_e = tensor.empty() : {T}")
        lines.append(f"{r}_f = linalg.fill ins({r}_c : {out.dtype}) "
                     f"outs({r}_e : {T}) -> {T}")
        a, b = ins
        lines.append(f"{r} = linalg.{k} ins({n(a.name)}, {n(b.name)} : "
                     f"{a.type()}, {b.type()}) outs({r}_f : {T}) -> {T}")
    elif k in ("narrow", "narrow_int"):
        # Two operands narrowed into tensors of their own, combined there,
        # widened back: the narrow tensors live in memory unless fused.
        a, b = ins
        narrow = op.params["to"] if k == "narrow" else "i8"
        if k == "narrow":
            down, up = "arith.truncf", "arith.extf"
            comb = NARROW_FNS[op.params["fn"]]
        else:
            down, up = "arith.trunci", "arith.extsi"
            comb = INT_ARITH[op.params["fn"]]
        parallel = ["parallel"] * rank
        tmp = {tag: Value(f"{op.result}_{tag}", out.shape, narrow, None)
               for tag in ("na", "nb", "nc")}
        for tag, x in (("na", a), ("nb", b)):
            generic([x], [ident] * 2, parallel,
                    [f"%r = {down} %in0 : {x.dtype} to {narrow}",
                     f"linalg.yield %r : {narrow}"], result=tmp[tag])
        generic([tmp["na"], tmp["nb"]], [ident] * 3, parallel,
                [f"%r = {comb} %in0, %in1 : {narrow}",
                 f"linalg.yield %r : {narrow}"], result=tmp["nc"])
        generic([tmp["nc"]], [ident] * 2, parallel,
                [f"%r = {up} %in0 : {narrow} to {out.dtype}",
                 f"linalg.yield %r : {out.dtype}"])
    elif k == "cross_entropy":
        logits, labels = ins
        lines.append(f"{r} = train.cross_entropy {op.params['reduction']} "
                     f"{n(logits.name)}, {n(labels.name)} ignore_index = -100"
                     f" : ({logits.type()}, {labels.type()}) -> {T}")
    elif k == "transpose":
        lines.append(f"{r}_e = tensor.empty() : {T}")
        perm = ", ".join(str(x) for x in op.params["perm"])
        lines.append(f"{r} = linalg.transpose ins({n(ins[0].name)} : "
                     f"{ins[0].type()}) outs({r}_e : {T}) "
                     f"permutation = [{perm}]")
    elif k == "reshape":
        a = ins[0]
        if len(out.shape) < len(a.shape):   # collapse [a, b] -> [a*b]
            lines.append(f"{r} = tensor.collapse_shape {n(a.name)} [[0, 1]]"
                         f" : {a.type()} into {T}")
        else:                                # expand [n] -> [a, b]
            lines.append(f"{r} = tensor.expand_shape {n(a.name)} [[0, 1]] "
                         f"output_shape [{out.shape[0]}, {out.shape[1]}]"
                         f" : {a.type()} into {T}")
    elif k == "slice":
        offs = ", ".join(str(o) for o in op.params["offsets"])
        sizes = ", ".join(str(s) for s in op.params["sizes"])
        ones = ", ".join("1" for _ in op.params["sizes"])
        lines.append(f"{r} = tensor.extract_slice {n(ins[0].name)}[{offs}]"
                     f" [{sizes}] [{ones}] : {ins[0].type()} to {T}")
    else:
        raise AssertionError(k)
    # Body-local names (%r, %t0, %in0, ...) stay inside the region; the
    # result's auxiliary names (%<p><result>_e, _c, _f) are unique.
    return lines


# --------------------------------------------------------------------------
# Generation.

class Generator:
    def __init__(self, rng):
        self.rng = rng

    def pick(self, seq):
        return seq[int(self.rng.integers(len(seq)))]

    def shape(self, rank=None):
        rank = int(self.rng.integers(1, 4)) if rank is None else rank
        return tuple(self.pick(DIMS) for _ in range(rank))

    def new_arg(self, prog, shape, dtype):
        name = f"a{len(prog.args)}"
        rng = self.rng
        if dtype == "i1":
            ref = rng.random(shape) < 0.5
        elif dtype in INTS:
            ref = rng.integers(-20, 21, shape).astype(NP_TYPES[dtype])
        else:
            ref = rng.uniform(-2, 2, shape).astype(NP_TYPES[dtype])
            # Some exact zeros and repeated values: ties in max and compares.
            ref[rng.random(shape) < 0.1] = 0
        v = Value(name, shape, dtype, ref, exact=True)
        prog.args.append(v)
        return v

    def operand(self, prog, vals, pred, make):
        """An existing value satisfying `pred` (or a new argument from
        `make()` = (shape, dtype))."""
        cands = [v for v in vals.values() if pred(v)]
        if cands and self.rng.random() < 0.75:
            return self.pick(cands)
        shape, dtype = make()
        v = self.new_arg(prog, shape, dtype)
        vals[v.name] = v
        if dtype in ("f32", "f64") and self.rng.random() < 0.5:
            # A producer of its own, used once: what fusion looks for.
            name = f"w{len(prog.ops)}_{len(vals)}"
            if self.rng.random() < 0.5:
                g = self.new_arg(prog, shape, dtype)
                vals[g.name] = g
                op = Op("accumulate", [v.name, g.name], name)
            else:
                op = Op("unary", [v.name], name, fn=self.pick(list(UNARY)))
            prog.ops.append(op)
            vals[name] = EVAL[op.kind](op, [vals[o] for o in op.operands])
            return vals[name]
        return v

    def program(self, n_ops):
        prog = Program()
        vals = {}
        tries = 0
        while len(prog.ops) < n_ops and tries < 20 * n_ops:
            tries += 1
            op = self.try_op(prog, vals, f"v{len(prog.ops)}")
            if op is None:
                continue
            prog.ops.append(op)
            vals[op.result] = EVAL[op.kind](op, [vals[o] for o in op.operands])
        if not prog.ops:
            return None
        # Results: the last value and a few others, masks and ints included.
        names = [op.result for op in prog.ops]
        k = min(len(names), int(self.rng.integers(1, 4)))
        chosen = {names[-1]} | set(self.rng.choice(names, k, replace=False))
        prog.results = [n for n in names if n in chosen]
        evaluate(prog)
        return prog

    def try_op(self, prog, vals, res):
        rng = self.rng
        kind = self.pick(["accumulate", "unary", "binary", "binary",
                          "reduce", "compare",
                          "logic", "select", "select", "int_binary",
                          "int_to_float", "float_cast", "gather", "matmul",
                          "transpose", "reshape", "slice", "narrow",
                          "narrow_int", "batch_matmul", "cross_entropy"])
        fl = lambda v: v.is_float
        mk_float = lambda: (self.shape(), self.pick(FLOATS))
        if kind == "accumulate":
            acc = self.operand(prog, vals, fl, mk_float)
            g = self.operand(prog, vals, lambda v: v.dtype == acc.dtype and
                             v.shape == acc.shape, lambda: (acc.shape,
                                                            acc.dtype))
            return Op(kind, [acc.name, g.name], res)
        if kind == "unary":
            a = self.operand(prog, vals, fl, mk_float)
            return Op(kind, [a.name], res, fn=self.pick(list(UNARY)))
        if kind == "binary":
            a = self.operand(prog, vals, fl, mk_float)
            mapping = self.read_map(a.shape)
            bshape = tuple(a.shape[d] for d in mapping)
            b = self.operand(prog, vals, lambda v: v.dtype == a.dtype and
                             v.shape == bshape, lambda: (bshape, a.dtype))
            return Op(kind, [a.name, b.name], res, fn=self.pick(list(BINARY)),
                      bmap=mapping)
        if kind == "reduce":
            a = self.operand(prog, vals, lambda v: v.is_float and
                             len(v.shape) >= 1, mk_float)
            return Op(kind, [a.name], res, dim=int(rng.integers(len(a.shape))),
                      fn=self.pick(["sum", "sum", "max"]))
        if kind == "compare":
            # Only values the float32 and float64 evaluations share
            # exactly, so that rounding never flips a compare.
            a = self.operand(prog, vals, lambda v: v.exact and v.dtype != "i1",
                             lambda: (self.shape(), self.pick(FLOATS + INTS)))
            t = float(rng.uniform(-1.5, 1.5)) if a.is_float else \
                int(rng.integers(-10, 11))
            if a.is_float:
                t = float(np.float32(t))
            return Op(kind, [a.name], res, pred=self.pick(["gt", "lt"]),
                      threshold=t)
        if kind == "logic":
            a = self.operand(prog, vals, lambda v: v.dtype == "i1",
                             lambda: (self.shape(), "i1"))
            fn = self.pick(["and", "or", "xor", "not"])
            if fn == "not":
                return Op(kind, [a.name], res, fn=fn)
            b = self.operand(prog, vals, lambda v: v.dtype == "i1" and
                             v.shape == a.shape, lambda: (a.shape, "i1"))
            return Op(kind, [a.name, b.name], res, fn=fn)
        if kind == "select":
            m = self.operand(prog, vals, lambda v: v.dtype == "i1",
                             lambda: (self.shape(), "i1"))
            dtype = self.pick(FLOATS)
            a = self.operand(prog, vals, lambda v: v.dtype == dtype and
                             v.shape == m.shape, lambda: (m.shape, dtype))
            mapping = self.read_map(m.shape)
            bshape = tuple(m.shape[d] for d in mapping)
            b = self.operand(prog, vals, lambda v: v.dtype == dtype and
                             v.shape == bshape, lambda: (bshape, dtype))
            return Op(kind, [m.name, a.name, b.name], res, bmap=mapping,
                      extract=bool(rng.random() < 0.3))
        if kind in ("int_binary", "narrow_int"):
            a, b = self.small_int_pair(prog, vals)
            return Op(kind, [a.name, b.name], res,
                      fn=self.pick(list(NARROW_INT_FNS)))
        if kind == "int_to_float":
            a = self.operand(prog, vals, lambda v: v.dtype in INTS and
                             np.max(np.abs(v.ref), initial=0) < 2 ** 24,
                             lambda: (self.shape(), self.pick(INTS)))
            return Op(kind, [a.name], res, to=self.pick(FLOATS))
        if kind == "float_cast":
            a = self.operand(prog, vals, fl, mk_float)
            to = self.pick(["bf16", "f64"]) if a.dtype == "f32" else "f32"
            return Op(kind, [a.name], res, to=to)
        if kind == "gather":
            table = self.operand(prog, vals, lambda v: v.is_float and
                                 len(v.shape) >= 1,
                                 lambda: (self.shape(int(rng.integers(1, 3))),
                                          self.pick(FLOATS)))
            N = self.pick(DIMS)
            V = table.shape[0]
            idx = Value(f"a{len(prog.args)}", (N,), self.pick(INTS),
                        rng.integers(-2, V + 2, (N,)).astype(
                            NP_TYPES["i64"]), exact=True)
            idx.ref = idx.ref.astype(NP_TYPES[idx.dtype])
            prog.args.append(idx)
            vals[idx.name] = idx
            return Op(kind, [table.name, idx.name], res)
        if kind == "matmul":
            a = self.operand(prog, vals, lambda v: v.dtype == "f32" and
                             len(v.shape) == 2,
                             lambda: (self.shape(2), "f32"))
            K = a.shape[1]
            b = self.operand(prog, vals, lambda v: v.dtype == "f32" and
                             len(v.shape) == 2 and v.shape[0] == K,
                             lambda: ((K, self.pick(DIMS)), "f32"))
            return Op(kind, [a.name, b.name], res)
        if kind == "narrow":
            # Bounded operands: float16 overflows at 65504.
            small = lambda v: v.dtype == "f32" and \
                np.max(magnitude(v) + v.err, initial=0) < 100
            a = self.operand(prog, vals, small, lambda: (self.shape(), "f32"))
            b = self.operand(prog, vals, lambda v: small(v) and
                             v.shape == a.shape, lambda: (a.shape, "f32"))
            return Op(kind, [a.name, b.name], res,
                      to=self.pick(["f16", "bf16"]),
                      fn=self.pick(list(NARROW_FNS)))
        if kind == "batch_matmul":
            a = self.operand(prog, vals, lambda v: v.dtype == "f32" and
                             len(v.shape) == 3,
                             lambda: (self.shape(3), "f32"))
            Bt, _, K = a.shape
            b = self.operand(prog, vals, lambda v: v.dtype == "f32" and
                             len(v.shape) == 3 and v.shape[:2] == (Bt, K),
                             lambda: ((Bt, K, self.pick(DIMS)), "f32"))
            return Op(kind, [a.name, b.name], res)
        if kind == "cross_entropy":
            logits = self.operand(prog, vals, lambda v: v.dtype == "f32" and
                                  len(v.shape) == 2 and
                                  np.max(magnitude(v), initial=0) < 30,
                                  lambda: (self.shape(2), "f32"))
            N, V = logits.shape
            y = rng.integers(0, V, (N,)).astype(np.int64)
            y[rng.random(N) < 0.3] = -100
            labels = Value(f"a{len(prog.args)}", (N,), "i64", y, exact=True)
            prog.args.append(labels)
            vals[labels.name] = labels
            return Op(kind, [logits.name, labels.name], res,
                      reduction=self.pick(["mean", "sum"]))
        if kind == "transpose":
            a = self.operand(prog, vals, lambda v: len(v.shape) >= 2 and
                             v.dtype != "i1",
                             lambda: (self.shape(int(rng.integers(2, 4))),
                                      self.pick(FLOATS)))
            perm = list(rng.permutation(len(a.shape)))
            if perm == sorted(perm):
                perm = perm[1:] + perm[:1]
            return Op(kind, [a.name], res, perm=[int(p) for p in perm])
        if kind == "reshape":
            a = self.operand(prog, vals, lambda v: len(v.shape) in (1, 2),
                             lambda: (self.shape(int(rng.integers(1, 3))),
                                      self.pick(FLOATS)))
            if len(a.shape) == 2:
                shape = (a.shape[0] * a.shape[1],)
            else:
                n = a.shape[0]
                divs = [d for d in range(1, n + 1) if n % d == 0]
                d = self.pick(divs)
                shape = (d, n // d)
            return Op(kind, [a.name], res, shape=shape)
        if kind == "slice":
            a = self.operand(prog, vals, lambda v: len(v.shape) >= 1,
                             lambda: (self.shape(), self.pick(FLOATS)))
            sizes, offsets = [], []
            for d in a.shape:
                s = int(rng.integers(1, d + 1))
                sizes.append(s)
                offsets.append(int(rng.integers(0, d - s + 1)))
            return Op(kind, [a.name], res, sizes=tuple(sizes),
                      offsets=tuple(offsets))
        return None

    def small_int_pair(self, prog, vals):
        """Two integer operands of one type and shape, below 2^12 in
        magnitude (their sums and products stay exact)."""
        small = lambda v: v.dtype in INTS and \
            np.max(np.abs(v.ref), initial=0) < 2 ** 12
        a = self.operand(prog, vals, small,
                         lambda: (self.shape(), self.pick(INTS)))
        b = self.operand(prog, vals, lambda v: small(v) and
                         v.dtype == a.dtype and v.shape == a.shape,
                         lambda: (a.shape, a.dtype))
        return a, b

    def read_map(self, shape):
        """How a second operand is read in a loop space of `shape`: the
        loop dimension of each of its dimensions (identity, a broadcast
        that drops some, or a transpose)."""
        rank = len(shape)
        choice = self.rng.random()
        if choice < 0.45 or rank == 0:
            return list(range(rank))
        if choice < 0.8:
            keep = [d for d in range(rank) if self.rng.random() < 0.5]
            return keep
        perm = [int(p) for p in self.rng.permutation(rank)]
        return perm


# --------------------------------------------------------------------------
# Bundles: several programs in one function.

def emit_bundle(progs, name="main"):
    args, res_types, res_names, body = [], [], [], []
    for i, prog in enumerate(progs):
        p = f"p{i}_"
        vals = prog.values
        for a in prog.args:
            args.append(f"%{p}{a.name}: {a.type()}")
        for op in prog.ops:
            body.extend(emit_op(op, vals, p))
        for r in prog.results:
            res_names.append(f"%{p}{r}")
            res_types.append(vals[r].type())
    text = [f"func.func @{name}({', '.join(args)}) -> "
            f"({', '.join(res_types)}) {{"]
    text += ["  " + l for l in body]
    text.append(f"  return {', '.join(res_names)} : {', '.join(res_types)}")
    text.append("}")
    return "\n".join(text) + "\n"


def bundle_inputs(progs):
    # np.array, not np.ascontiguousarray, which makes 0-d arrays 1-d.
    return [np.array(a.ref, NP_TYPES[a.dtype], order="C")
            for prog in progs for a in prog.args]


def bundle_expected(progs):
    return [(prog, prog.values[r]) for prog in progs for r in prog.results]


# --------------------------------------------------------------------------
# Running.

PYTHON_CALL = """
import sys
import numpy as np
sys.path.insert(0, sys.argv[1])
import ga_step
step = ga_step.load(sys.argv[2])
out = sys.argv[3]
args = [np.load(p) for p in sys.argv[4:]]
results = step(*args)
results = results if isinstance(results, (list, tuple)) else [results]
import os
os.makedirs(out)
for i, r in enumerate(results):
    np.save(os.path.join(out, f"result{i}.npy"), np.asarray(r))
print(f"wrote {len(results)} result(s)")
"""


def run_process(cmd, **kwargs):
    """subprocess.run, with a program that cannot be started (missing,
    being rebuilt) as a failed run instead of an exception."""
    try:
        return subprocess.run(cmd, **kwargs)
    except OSError as e:
        return subprocess.CompletedProcess(cmd, 127, "", f"{cmd[0]}: {e}")


class Runner:
    def __init__(self, build, workdir, mpirun=None):
        self.bin = os.path.join(build, "bin")
        self.workdir = workdir
        self.root = os.path.dirname(os.path.dirname(os.path.abspath(
            __file__)))
        self.mpirun = mpirun
        self.last_error = ""

    def run_custom(self, source, inputs, work, options="target=cpu",
                   memory=False, aot=None, ranks=1, refusal=None, extra=()):
        """Results of `source` compiled with `options`: by ga-opt and ga-run
        (under `mpirun -np ranks` when ranks > 1), or, with aot="aot" or
        "python", by ga-compile and ga-exec or the Python binding. With
        `memory`, (results, measured peak bytes). "refused" when the
        compiler's error contains `refusal`; an error string otherwise.
        `extra`: more flags of ga-run."""
        os.makedirs(work, exist_ok=True)
        src = os.path.join(work, "input.mlir")
        with open(src, "w") as f:
            f.write(source)
        paths = []
        for i, a in enumerate(inputs):
            paths.append(os.path.join(work, f"arg{i}.npy"))
            np.save(paths[-1], a)
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        if aot:
            lib = os.path.join(work, "libstep.so")
            rest = options.replace("target=cpu", "").strip()
            done = run_process(
                [self.tool("ga-compile"), src, "-o", lib, "--jobs=1"]
                + ([f"--pipeline-options={rest}"] if rest else []),
                capture_output=True, text=True)
            if done.returncode:
                return f"ga-compile failed:\n{done.stderr[-3000:]}"
            if aot == "python":
                cmd = [sys.executable, "-c", PYTHON_CALL,
                       os.path.join(self.root, "python"), lib, out, *paths]
            else:
                cmd = [self.tool("ga-exec"), lib, *paths, "--out-dir", out,
                       "--num-threads=1"]
        else:
            lowered = os.path.join(work, "lowered.mlir")
            done = run_process(
                [self.tool("ga-opt"), src, f"--ga-pipeline={options}", "-o",
                 lowered], capture_output=True, text=True)
            if done.returncode:
                if refusal and refusal in done.stderr:
                    self.last_error = done.stderr
                    return "refused"
                return f"ga-opt failed:\n{done.stderr[-3000:]}"
            launcher = (shlex.split(self.mpirun) + ["-np", str(ranks)]
                        if ranks > 1 else [])
            cmd = [*launcher, self.tool("ga-run"), lowered, *paths,
                   "--out-dir", out, *extra] + (["--report-memory"] if memory
                                                else [])
        done = run_process(cmd, capture_output=True, text=True,
                           env=dict(os.environ, OMP_NUM_THREADS="1"))
        if done.returncode:
            return f"{os.path.basename(cmd[0])} exited with " \
                   f"{done.returncode}:\n{done.stdout[-1500:]}" \
                   f"{done.stderr[-3000:]}"
        m = re.search(r"wrote (\d+) result", done.stdout)
        count = int(m.group(1)) if m else 0
        results = [np.load(os.path.join(out, f"result{i}.npy"))
                   for i in range(count)]
        if memory:
            peak = re.search(r"^peak_bytes: (\d+)", done.stdout, re.M)
            return results, int(peak.group(1)) if peak else 0
        return results

    def tool(self, name):
        return os.path.join(self.bin, name)

    def run(self, config, source, inputs, work):
        """Results of `source` under `config` (list of arrays), or an error
        string."""
        options, extra = CONFIGS[config]
        if extra is None:  # ahead of time
            return self.run_custom(source, inputs, work, options, aot="aot")
        return self.run_custom(source, inputs, work, options, extra=extra)


def oracle_mismatch(got, value):
    """None when `got` is within the oracle's bound of `value`, else a
    description."""
    want_dtype = NP_TYPES[value.dtype]
    if got.dtype != want_dtype or tuple(got.shape) != value.shape:
        return f"got {got.dtype} {got.shape}, expected " \
               f"{np.dtype(want_dtype)} {value.shape}"
    if not value.is_float:
        bad = np.asarray(got) != np.asarray(value.ref)
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return f"element {i}: {got[i]!r}, expected {value.ref[i]!r}"
        return None
    g = np.asarray(got, np.float64)
    ref = np.asarray(value.ref, np.float64)
    bound = 2 * np.asarray(value.err) + 0.0
    diff = np.abs(g - ref)
    bad = ~(diff <= bound) | ~np.isfinite(g)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return (f"element {i}: {g[i]!r}, expected {ref[i]!r} within "
                f"{bound[i]:.3g} ({int(bad.sum())} of {bad.size} elements "
                f"off)")
    return None


def bitwise_mismatch(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype} {a.shape} against {b.dtype} {b.shape}"
    if a.tobytes() != b.tobytes():
        bad = np.asarray(a).view(np.uint8).reshape(-1) != \
            np.asarray(b).view(np.uint8).reshape(-1)
        return (f"different bits in {int(bad.sum())} of {bad.size} bytes "
                f"({a.ravel()[:4]} against {b.ravel()[:4]}...)")
    return None


def check_bundle(runner, progs, configs, work):
    """[(kind, description, program index, result index within that
    program, configs)] of one bundle."""
    source = emit_bundle(progs)
    inputs = bundle_inputs(progs)
    expected = bundle_expected(progs)
    # Global result index -> (program index, its result index).
    owner = [(i, j) for i, prog in enumerate(progs)
             for j in range(len(prog.results))]
    results, findings = {}, []
    for config in configs:
        got = runner.run(config, source, inputs, os.path.join(work, config))
        if isinstance(got, str):
            findings.append(("error", got, None, None, (config,)))
            continue
        if len(got) != len(expected):
            findings.append(("error", f"{len(got)} results, expected "
                             f"{len(expected)}", None, None, (config,)))
            continue
        results[config] = got
        for k, (g, (prog, value)) in enumerate(zip(got, expected)):
            why = oracle_mismatch(g, value)
            if why:
                findings.append(("oracle", why, *owner[k], (config,)))
    for a, b in BITWISE_PAIRS:
        if a in results and b in results:
            for k, (x, y) in enumerate(zip(results[a], results[b])):
                why = bitwise_mismatch(x, y)
                if why:
                    findings.append(("bitwise", why, *owner[k], (a, b)))
    if any(f[0] == "error" for f in findings) and len(progs) > 1:
        # A configuration failed on the bundle: every program alone, in
        # every configuration, so that one program's error neither hides
        # the others' findings nor goes without its program's name.
        findings = []
        for i, prog in enumerate(progs):
            for f in check_bundle(runner, [prog], configs,
                                  os.path.join(work, f"alone{i}")):
                findings.append((f[0], f[1], i, f[3], f[4]))
    return findings


# --------------------------------------------------------------------------
# Minimization.

def prune(prog):
    """Drops operations and arguments no result depends on."""
    live = set(prog.results)
    keep = []
    for op in reversed(prog.ops):
        if op.result in live:
            keep.append(op)
            live.update(op.operands)
    prog.ops = list(reversed(keep))
    prog.args = [a for a in prog.args if a.name in live]
    evaluate(prog)


def copy_program(prog):
    q = Program()
    q.args = [Value(a.name, a.shape, a.dtype, a.ref, exact=True)
              for a in prog.args]
    q.ops = [Op(op.kind, op.operands, op.result, **op.params)
             for op in prog.ops]
    q.results = list(prog.results)
    evaluate(q)
    return q


def still_fails(runner, prog, finding, work):
    kind, _, _, _, configs = finding
    found = check_bundle(runner, [prog], configs, work)
    return any(f[0] == kind for f in found)


def minimize(runner, prog, finding, work):
    """The smallest program (one result) that still shows `finding`."""
    kind, _, _, j, configs = finding
    prog = copy_program(prog)
    # The result of the finding, alone.
    if j is not None:
        result = prog.results[j] if j < len(prog.results) else None
        if result:
            trial = copy_program(prog)
            trial.results = [result]
            prune(trial)
            if still_fails(runner, trial, finding, work):
                prog = trial
    changed = True
    while changed:
        changed = False
        # Replace an operation by an argument holding its values (float64
        # values rounded to the type, so the consumers see what they saw).
        for op in list(reversed(prog.ops)):
            # A result stays computed (returning an argument as it is
            # would test something else).
            if op.result in prog.results:
                continue
            trial = copy_program(prog)
            v = trial.values[op.result]
            arg = Value(f"m{len(trial.args)}_{op.result}", v.shape, v.dtype,
                        np.asarray(v.ref).astype(NP_TYPES[v.dtype]),
                        exact=True)
            trial.ops = [o for o in trial.ops if o.result != op.result]
            for o in trial.ops:
                o.operands = [arg.name if x == op.result else x
                              for x in o.operands]
            if not trial.ops:
                continue
            trial.args.append(arg)
            prune(trial)
            if still_fails(runner, trial, finding, work):
                prog, changed = trial, True
                break
    return prog


def write_reproducer(runner, prog, finding, path):
    kind, why, _, _, configs = finding
    os.makedirs(path, exist_ok=True)
    source = emit_bundle([prog])
    header = [f"// difftest reproducer: {kind} mismatch in "
              f"{' against '.join(configs)}" +
              (" (against the float64 oracle)" if kind == "oracle" else ""),
              f"// {why.splitlines()[0] if why else ''}",
              "// Inputs: arg<i>.npy beside this file; run with ga-run "
              "after ga-opt --ga-pipeline=<options>:"]
    for c in configs:
        options, extra = CONFIGS[c]
        how = ("ga-compile --pipeline-options=<the options but target>, "
               "then ga-exec" if extra is None else
               "ga-run " + " ".join(extra))
        header.append(f"//   {c}: --ga-pipeline=\"{options}\", {how}")
    with open(os.path.join(path, "reproducer.mlir"), "w") as f:
        f.write("\n".join(header) + "\n" + source)
    for i, a in enumerate(bundle_inputs([prog])):
        np.save(os.path.join(path, f"arg{i}.npy"), a)
    for i, (p, v) in enumerate(bundle_expected([prog])):
        np.save(os.path.join(path, f"expected{i}.npy"),
                np.asarray(v.ref, np.float64 if v.is_float else
                           NP_TYPES[v.dtype]))
    return os.path.join(path, "reproducer.mlir")


# --------------------------------------------------------------------------
# Generated training steps: splits exact, gradients right.

STEP_ACTS = {
    "tanh": (np.tanh, ["%r = math.tanh %a : f32"]),
    "identity": (lambda x: x, ["%r = arith.addf %a, %czero : f32"]),
    "scale": (lambda x: 0.5 * x, ["%r = arith.mulf %a, %chalf : f32"]),
}


class StepProgram:
    """A train.step: tokens x [B, S, D] through `layers` (weight [in, out],
    optional bias [out], activation) to logits [B*S, V], mean cross-entropy
    over the labels that are not -100."""

    def __init__(self, rng):
        self.B = int(rng.choice([4, 8]))
        self.S = int(rng.integers(1, 5))
        dims = [int(rng.integers(2, 9)) for _ in range(int(rng.integers(1, 3)))]
        self.V = int(rng.integers(2, 8))
        dims.append(self.V)
        self.layers = []
        for i in range(len(dims) - 1):
            act = "identity" if i == len(dims) - 2 else \
                str(rng.choice(list(STEP_ACTS)))
            self.layers.append((dims[i], dims[i + 1], bool(rng.random() < 0.5),
                                act))
        self.D = dims[0]
        self.params = []
        for din, dout, bias, _ in self.layers:
            self.params.append(rng.uniform(-1, 1, (din, dout)).astype(
                np.float32))
            if bias:
                self.params.append(rng.uniform(-0.5, 0.5, dout).astype(
                    np.float32))
        self.x = rng.uniform(-1, 1, (self.B, self.S, self.D)).astype(
            np.float32)
        labels = rng.integers(0, self.V, (self.B, self.S)).astype(np.int64)
        labels[rng.random((self.B, self.S)) < 0.3] = -100
        labels[int(rng.integers(self.B))] = -100   # one example all padding
        if (labels != -100).sum() == 0:
            labels[0, 0] = 0
        self.labels = labels

    def forward(self, params):
        """The loss in float64."""
        h = self.x.reshape(-1, self.D).astype(np.float64)
        k = 0
        for din, dout, bias, act in self.layers:
            h = h @ params[k]
            k += 1
            if bias:
                h = h + params[k]
                k += 1
            h = STEP_ACTS[act][0](h)
        y = self.labels.reshape(-1)
        valid = y != -100
        m = h.max(axis=1, keepdims=True)
        lse = np.log(np.exp(h - m).sum(axis=1)) + m[:, 0]
        picked = h[np.arange(len(y)), np.where(valid, y, 0)]
        return float(((lse - picked) * valid).sum() / valid.sum())

    def gradients(self):
        """Central finite differences of the float64 forward."""
        base = [p.astype(np.float64) for p in self.params]
        grads = []
        for i, p in enumerate(base):
            g = np.zeros_like(p)
            for idx in np.ndindex(p.shape):
                h = 1e-6 * max(1.0, abs(p[idx]))
                for sign in (1, -1):
                    q = [b.copy() for b in base]
                    q[i][idx] += sign * h
                    g[idx] += sign * self.forward(q) / (2 * h)
            grads.append(g)
        return grads

    def emit(self, microbatches, data_parallel=1):
        N = self.B * self.S
        ptypes = []
        for din, dout, bias, _ in self.layers:
            ptypes.append(f"tensor<{din}x{dout}xf32>")
            if bias:
                ptypes.append(f"tensor<{dout}xf32>")
        xt = f"tensor<{self.B}x{self.S}x{self.D}xf32>"
        lt = f"tensor<{self.B}x{self.S}xi64>"
        pn = [f"%p{i}" for i in range(len(ptypes))]
        bn = [f"%b{i}" for i in range(len(ptypes))]
        lines = [f"func.func @step({', '.join(f'{n}: {t}' for n, t in zip(pn, ptypes))}, "
                 f"%x: {xt}, %y: {lt}) -> (tensor<f32>, {', '.join(ptypes)}, "
                 f"tensor<i64>) {{",
                 f"  %loss, {', '.join(f'%g{i}' for i in range(len(ptypes)))},"
                 f" %count = train.step params({', '.join(pn)} : "
                 f"{', '.join(ptypes)}) batch(%x, %y : {xt}, {lt})",
                 f"      attributes {{microbatches = {microbatches} : i64"
                 + (f", data_parallel = {data_parallel} : i64"
                    if data_parallel > 1 else "") + "}",
                 f"      -> tensor<f32> grads({', '.join(ptypes)}) "
                 f"aux(tensor<i64>) {{",
                 f"  ^bb0({', '.join(f'{n}: {t}' for n, t in zip(bn, ptypes))},"
                 f" %bx: {xt}, %by: {lt}):",
                 "    %zero = arith.constant 0.0 : f32",
                 f"    %h0 = tensor.collapse_shape %bx [[0, 1], [2]] : {xt} "
                 f"into tensor<{N}x{self.D}xf32>"]
        k = 0
        h = "%h0"
        for li, (din, dout, bias, act) in enumerate(self.layers):
            t = f"tensor<{N}x{dout}xf32>"
            lines += [f"    %e{li} = tensor.empty() : {t}",
                      f"    %z{li} = linalg.fill ins(%zero : f32) outs(%e{li}"
                      f" : {t}) -> {t}",
                      f"    %m{li} = linalg.matmul ins({h}, {bn[k]} : "
                      f"tensor<{N}x{din}xf32>, tensor<{din}x{dout}xf32>) "
                      f"outs(%z{li} : {t}) -> {t}"]
            k += 1
            cur = f"%m{li}"
            if bias:
                lines += [
                    f"    %c{li} = linalg.generic {{indexing_maps = ["
                    "affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, "
                    "affine_map<(i, j) -> (i, j)>], iterator_types = "
                    f"[\"parallel\", \"parallel\"]}} ins({cur}, {bn[k]} : {t}, "
                    f"tensor<{dout}xf32>) outs(%e{li} : {t}) {{",
                    "    ^bb0(%a: f32, %b: f32, %o: f32):",
                    "      %r = arith.addf %a, %b : f32",
                    "      linalg.yield %r : f32",
                    f"    }} -> {t}"]
                k += 1
                cur = f"%c{li}"
            body = [l.replace("%a", "%in") for l in STEP_ACTS[act][1]]
            lines += [
                f"    %a{li} = linalg.generic {{indexing_maps = ["
                "affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],"
                f" iterator_types = [\"parallel\", \"parallel\"]}} ins({cur} :"
                f" {t}) outs(%e{li} : {t}) {{",
                "    ^bb0(%in: f32, %o: f32):",
                "      %czero = arith.constant 0.0 : f32",
                "      %chalf = arith.constant 0.5 : f32"]
            lines += ["      " + l for l in body]
            lines += ["      linalg.yield %r : f32", f"    }} -> {t}"]
            h = f"%a{li}"
        lines += [f"    %fy = tensor.collapse_shape %by [[0, 1]] : {lt} into "
                  f"tensor<{N}xi64>",
                  f"    %l, %n = train.cross_entropy mean {h}, %fy "
                  "ignore_index = -100",
                  f"        : (tensor<{N}x{self.V}xf32>, tensor<{N}xi64>) -> "
                  "(tensor<f32>, tensor<i64>)",
                  "    train.yield %l, %n : tensor<f32>, tensor<i64>",
                  "  }",
                  f"  return %loss, {', '.join(f'%g{i}' for i in range(len(ptypes)))},"
                  f" %count : tensor<f32>, {', '.join(ptypes)}, tensor<i64>",
                  "}"]
        return "\n".join(lines) + "\n"


def find_mpirun(choice):
    """The mpirun command line for 2-rank runs, or None."""
    if choice == "none":
        return None
    if choice != "auto":
        return choice
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return None
    version = subprocess.run([mpirun, "--version"], capture_output=True,
                             text=True)
    if re.search(r"Open ?MPI|OpenRTE", version.stdout + version.stderr):
        return mpirun + " --oversubscribe --allow-run-as-root"
    return mpirun


def step_configs(runner):
    """The configurations a generated step runs in besides the CPU
    pipeline at k = 1, 2 and 4: (name, what it is compared with)."""
    configs = ["cuda-emulated", "aot", "python", "remat", "chunked"]
    if runner.mpirun:
        configs.append("ranks2")
    return configs


def check_step(runner, step, work):
    """Findings of one generated step.

    - cpu k = 1 (the reference run): the loss within 1e-5 of a float64
      forward, the count exact, each gradient within a relative 1e-5 of
      central finite differences of that forward;
    - k = 2 and 4 (micro-batches), aot (ga-compile + ga-exec), python (the
      binding on that library), remat (a memory budget of 70% of the
      measured peak, 90% if the planner refuses that; peak measured within
      it): bitwise k = 1;
    - chunked (loss-chunk-rows): gradients and count bitwise, the loss
      within a relative 1e-6 (its chunks' sums are another grouping of the
      same float32 terms);
    - ranks2 (data_parallel = 2 under mpirun): the same tolerances against
      the float64 references as k = 1 (the ranks' sums are added in another
      order), the count exact;
    - cuda-emulated (the CUDA device program on the CPU): against the
      float64 references, as k = 1.
    """
    findings = []
    inputs = step.params + [step.x, step.labels]
    loss64 = step.forward([p.astype(np.float64) for p in step.params])
    grads64 = step.gradients()
    count = int((step.labels != -100).sum())

    def against_references(tag, got):
        if abs(float(got[0]) - loss64) > 1e-5 * max(1.0, abs(loss64)):
            findings.append(f"{tag}: loss {float(got[0])!r}, float64 "
                            f"{loss64!r}")
        for i, g in enumerate(grads64):
            err = np.linalg.norm(got[1 + i] - g) / max(np.linalg.norm(g),
                                                       1e-12)
            # float32 sums of at most 64 terms (relative error about 1e-7,
            # measured up to 1.4e-7) against float64 central differences
            # (truncation and rounding below 1e-8).
            if not err <= 1e-5:
                findings.append(f"{tag}: gradient {i}: relative error "
                                f"{err:.3g} against finite differences")
        if int(got[-1]) != count:
            findings.append(f"{tag}: count {int(got[-1])}, expected {count}")

    def bitwise(tag, got, base, skip=()):
        for i, (a, b) in enumerate(zip(got, base)):
            if i in skip:
                continue
            why = bitwise_mismatch(a, b)
            if why:
                findings.append(f"{tag}: result {i} against k=1: {why}")

    def run(tag, source, **how):
        got = runner.run_custom(source, inputs, os.path.join(work, tag),
                                **how)
        if isinstance(got, str):
            findings.append(f"{tag}: {got.splitlines()[0]}\n{got}")
            return None
        return got

    base = run("k1", step.emit(1), memory=True)
    if base is None:
        return findings
    base, peak = base
    against_references("k=1", base)
    for k in [2, 4]:
        if step.B % k == 0:
            got = run(f"k{k}", step.emit(k))
            if got is not None:
                bitwise(f"k={k}", got, base)
    for config in step_configs(runner):
        if config == "cuda-emulated":
            got = run(config, step.emit(1), options=CONFIGS[config][0])
            if got is not None:
                against_references(config, got)
        elif config in ("aot", "python"):
            got = run(config, step.emit(1), aot=config)
            if got is not None:
                bitwise(config, got, base)
        elif config == "remat":
            # 70% of the measured peak, or, where the planner refuses it,
            # the smallest peak it says it reaches.
            budget = int(peak * 0.7)
            got = runner.run_custom(
                step.emit(1), inputs, os.path.join(work, "remat"),
                options=f"target=cpu memory-budget={budget}", memory=True,
                refusal="is infeasible")
            if got == "refused":
                smallest = re.search(r"the smallest peak the planner reaches"
                                     r" is (\d+) bytes", runner.last_error)
                budget = int(smallest.group(1)) if smallest else peak
                got = run("remat-smallest", step.emit(1),
                          options=f"target=cpu memory-budget={budget}",
                          memory=True)
            elif isinstance(got, str):
                findings.append(f"remat: {got.splitlines()[0]}\n{got}")
                got = None
            if got is not None:
                got, measured = got
                bitwise(f"remat budget {budget}", got, base)
                if measured > budget:
                    findings.append(f"remat: measured peak {measured} B "
                                    f"over the budget {budget} B")
        elif config == "chunked":
            rows = max(1, step.B * step.S // 3)
            got = run(config, step.emit(1),
                      options=f"target=cpu loss-chunk-rows={rows}")
            if got is not None:
                bitwise(f"chunked ({rows} rows)", got, base, skip=(0,))
                if abs(float(got[0]) - float(base[0])) > 1e-6 * max(
                        1.0, abs(float(base[0]))):
                    findings.append(f"chunked: loss {float(got[0])!r}, "
                                    f"unchunked {float(base[0])!r}")
        elif config == "ranks2" and step.B % 2 == 0:
            got = run(config, step.emit(1, data_parallel=2), ranks=2)
            if got is not None:
                against_references(config, got)
    return findings


# --------------------------------------------------------------------------
# The corpus: every example and lit input that runs.

CORPUS_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
                 "i64": np.int64, "i1": np.bool_}
# Configurations compared with `cpu` beyond the bitwise pairs: the same
# float32 terms summed in another order or contracted into fused
# multiply-adds, relative to the largest magnitude of the result.
CORPUS_RTOL = 1e-4


def corpus_chunks(paths):
    """(name, text) of every chunk (split at `// -----`) of every .mlir
    file under `paths`."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            for d, _, names in sorted(os.walk(path)):
                files += [os.path.join(d, n) for n in sorted(names)
                          if n.endswith(".mlir")]
        else:
            files.append(path)
    for f in files:
        with open(f) as h:
            text = h.read()
        for i, chunk in enumerate(re.split(r"^// -----\s*$", text,
                                           flags=re.M)):
            yield f"{f}#{i}", chunk


def corpus_entries(runner, text, work):
    """[(entry, [(shape, dtype)])] of the public functions of `text` with
    static tensor arguments of a type the runners take."""
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "chunk.mlir")
    with open(src, "w") as f:
        f.write(text)
    done = subprocess.run([runner.tool("ga-opt"), src,
                           "--mlir-print-op-generic"], capture_output=True,
                          text=True)
    if done.returncode:
        return []
    entries = []
    for m in re.finditer(r'"func\.func"\(\) <\{(.*?)\}> \(\{', done.stdout):
        attrs = m.group(1)
        name = re.search(r'sym_name = "([^"]+)"', attrs)
        ftype = re.search(r"function_type = \((.*?)\) ->", attrs)
        if not name or not ftype or "sym_visibility" in attrs:
            continue
        args = []
        for t in re.split(r",\s*(?=tensor<)", ftype.group(1).strip()):
            tm = re.fullmatch(r"tensor<((?:\d+x)*)(f32|f64|i32|i64|i1)>",
                              t.strip())
            if not tm:
                args = None
                break
            dims = tuple(int(d) for d in tm.group(1).split("x") if d)
            args.append((dims, tm.group(2)))
        if args is not None:
            entries.append((name.group(1), args))
    return entries


def corpus_inputs(rng, args, text=""):
    """Random arguments of a corpus function. A file that says
    `// difftest-floats: normal STDDEV` (a model's step, which positive
    weights in [0.05, 1] make ill-conditioned) gets its floats from a
    normal distribution of that deviation instead."""
    normal = re.search(r"^// difftest-floats: normal ([0-9.eE+-]+)$", text,
                       re.MULTILINE)
    arrays = []
    for shape, dtype in args:
        if dtype == "i1":
            arrays.append(rng.random(shape) < 0.5)
        elif dtype in ("i32", "i64"):
            # 0 and 1: valid labels, indices and counts for every model.
            arrays.append(rng.integers(0, 2, shape).astype(
                CORPUS_DTYPES[dtype]))
        elif normal:
            arrays.append((float(normal.group(1)) * rng.standard_normal(
                shape)).astype(CORPUS_DTYPES[dtype]))
        else:
            # Positive: an optimizer's second moments, a step count and a
            # learning rate are valid too.
            arrays.append(rng.uniform(0.05, 1, shape).astype(
                CORPUS_DTYPES[dtype]))
    return arrays


def check_corpus(runner, paths, configs, workdir, seed):
    """Runs every function of the corpus in `configs`. A chunk that `cpu`
    does not compile or run (an input meant to be refused, a step for
    several ranks) does not run and is counted apart; otherwise every other
    configuration must run it, the bitwise pairs must agree bit for bit and
    every configuration must be within CORPUS_RTOL of `cpu`. Returns
    (findings, ran, skipped)."""
    rng = np.random.default_rng(seed)
    findings, ran, skipped = [], 0, 0
    for i, (name, text) in enumerate(corpus_chunks(paths)):
        work = os.path.join(workdir, f"corpus{i}")
        entries = corpus_entries(runner, text, work)
        if not entries:
            skipped += 1
            shutil.rmtree(work, ignore_errors=True)
            continue
        for entry, args in entries:
            inputs = corpus_inputs(rng, args, text)
            source = text
            if len(entries) > 1:
                # One public function per run: the others made private.
                source = re.sub(r"func\.func @(?!" + re.escape(entry) +
                                r"\()", "func.func private @", text)
            results = {}
            for config in ["cpu"] + [c for c in configs if c != "cpu"]:
                got = runner.run(config, source, inputs,
                                 os.path.join(work, entry, config))
                if isinstance(got, str):
                    if config == "cpu":
                        break
                    findings.append(f"{name} @{entry}: {config}: "
                                    f"{got.splitlines()[0]}\n{got}")
                    continue
                results[config] = got
            if "cpu" not in results:
                skipped += 1
                continue
            ran += 1
            base = results["cpu"]
            for config, got in results.items():
                if len(got) != len(base):
                    findings.append(f"{name} @{entry}: {config}: "
                                    f"{len(got)} results, cpu {len(base)}")
                    continue
                for k, (a, b) in enumerate(zip(got, base)):
                    if a.dtype != b.dtype or a.shape != b.shape:
                        why = bitwise_mismatch(a, b)
                    elif a.dtype.kind == "f":
                        scale = float(np.nanmax(np.abs(b), initial=0.0))
                        diff = np.abs(a.astype(np.float64) - b)
                        bad = ~(diff <= CORPUS_RTOL * max(scale, 1e-30))
                        # NaN where cpu has NaN agrees.
                        bad &= ~(np.isnan(a) & np.isnan(b))
                        why = (f"{int(bad.sum())} element(s) off by up to "
                               f"{float(np.max(diff)):.3g} (|cpu| <= "
                               f"{scale:.3g})" if bad.any() else None)
                    else:
                        why = bitwise_mismatch(a, b)
                    if why:
                        findings.append(f"{name} @{entry}: {config} against"
                                        f" cpu: result {k}: {why}")
            for a, b in BITWISE_PAIRS:
                if a in results and b in results:
                    for k, (x, y) in enumerate(zip(results[a], results[b])):
                        why = bitwise_mismatch(x, y)
                        if why:
                            findings.append(f"{name} @{entry}: {a} against "
                                            f"{b}: result {k}: {why}")
        if not findings:
            shutil.rmtree(work, ignore_errors=True)
    return findings, ran, skipped


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200,
                        help="programs to generate")
    parser.add_argument("--bundle", type=int, default=8,
                        help="programs per compiled function")
    parser.add_argument("--ops", type=int, default=6,
                        help="at most this many operations per program")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated, of: " + ", ".join(CONFIGS))
    parser.add_argument("--build", default=os.path.join(root, "build"))
    parser.add_argument("--workdir", default=None)
    parser.add_argument("--no-minimize", action="store_true")
    parser.add_argument("--steps", type=int, default=0,
                        help="also this many generated train.steps "
                        "(k = 1, 2, 4; gradients against finite "
                        "differences)")
    parser.add_argument("--mpirun", default="auto",
                        help="the launcher of the steps' 2-rank runs "
                        "(default: mpirun from PATH, with Open MPI's "
                        "--oversubscribe --allow-run-as-root; 'none': no "
                        "rank runs)")
    parser.add_argument("--corpus", nargs="*", default=None,
                        metavar="PATH",
                        help="also run every function of these .mlir files "
                        "or folders (each `// -----` chunk apart) in every "
                        "configuration; no paths: examples/ and the test "
                        "tree")
    args = parser.parse_args()
    configs = args.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"difftest: error: --configs: unknown configuration "
                     f"'{c}' (expected one of {', '.join(CONFIGS)})")
    if args.count < 0 or args.bundle < 1 or args.ops < 1:
        sys.exit("difftest: error: --count must be >= 0, --bundle and --ops "
                 ">= 1")
    workdir = args.workdir or tempfile.mkdtemp(prefix="difftest-")
    os.makedirs(workdir, exist_ok=True)
    runner = Runner(args.build, workdir, mpirun=find_mpirun(args.mpirun))
    gen = Generator(np.random.default_rng(args.seed))
    start = time.time()
    done = mismatches = 0
    kinds = {}
    bundle_id = 0
    while done < args.count:
        progs = []
        while len(progs) < min(args.bundle, args.count - done):
            p = gen.program(int(gen.rng.integers(1, args.ops + 1)))
            if p is not None and p.results:
                progs.append(p)
        for p in progs:
            for op in p.ops:
                kinds[op.kind] = kinds.get(op.kind, 0) + 1
        work = os.path.join(workdir, f"bundle{bundle_id}")
        findings = check_bundle(runner, progs, configs, work)
        reported = set()
        for f in findings:
            kind, why, pi, j, cfgs = f
            key = (kind, pi, cfgs)
            if key in reported:
                continue
            reported.add(key)
            mismatches += 1
            print(f"FAIL difftest: bundle {bundle_id} program {pi}: {kind} "
                  f"mismatch in {' against '.join(cfgs)}: "
                  f"{why.splitlines()[0] if why else ''}")
            if pi is None:
                print(why)
                continue
            prog = progs[pi]
            if not args.no_minimize:
                prog = minimize(runner, prog, (kind, why, 0, j, cfgs),
                                os.path.join(work, f"min{pi}"))
            path = write_reproducer(
                runner, prog, f,
                os.path.join(workdir, f"repro-b{bundle_id}-p{pi}-{kind}"))
            print(f"     reproducer ({len(prog.ops)} operations): {path}")
        done += len(progs)
        bundle_id += 1
        if not findings:
            shutil.rmtree(work, ignore_errors=True)
        print(f"difftest: {done}/{args.count} programs, {mismatches} "
              f"mismatch(es), {time.time() - start:.0f} s", flush=True)
    if args.corpus is not None:
        paths = args.corpus or [os.path.join(root, "examples"),
                                os.path.join(root, "test")]
        found, ran, skipped = check_corpus(runner, paths, configs, workdir,
                                           args.seed)
        for why in found:
            mismatches += 1
            print(f"FAIL difftest: corpus: {why}")
        print(f"difftest: corpus: {ran} function(s) ran in "
              f"{len(configs)} configurations, {skipped} chunk(s) or "
              f"function(s) do not run on the CPU pipeline", flush=True)
    step_rng = np.random.default_rng(args.seed + 1_000_003)
    for i in range(args.steps):
        step = StepProgram(step_rng)
        work = os.path.join(workdir, f"step{i}")
        found = check_step(runner, step, work)
        for why in found:
            mismatches += 1
            print(f"FAIL difftest: step {i}: {why}")
        if found:
            with open(os.path.join(work, "step.mlir"), "w") as f:
                f.write(step.emit(1))
            print(f"     reproducer: {work}/step.mlir (arguments in k1/)")
        else:
            shutil.rmtree(work, ignore_errors=True)
    if args.steps:
        print(f"difftest: {args.steps} generated train.step(s) at k = 1, "
              f"2, 4 micro-batches and {', '.join(step_configs(runner))}",
              flush=True)
    print("difftest: operations generated: " + ", ".join(
        f"{k} {n}" for k, n in sorted(kinds.items())))
    print(f"difftest: seed {args.seed}: {done} programs in {bundle_id} "
          f"bundles x {len(configs)} configurations "
          f"({', '.join(configs)}): {mismatches} mismatch(es)")
    if mismatches == 0 and args.workdir is None:
        shutil.rmtree(workdir, ignore_errors=True)
    sys.exit(1 if mismatches else 0)


if __name__ == "__main__":
    main()
