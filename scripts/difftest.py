#!/usr/bin/env python3
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
element types (i1, i32, i64, f32, f64, and bf16 as a rounding step), element
type conversions, tensor.collapse_shape / expand_shape, extract_slice,
linalg.transpose and linalg.matmul. Arguments and results include i1
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
for one whole example. Run with microbatches = 1, 2 and 4 (the default
CPU pipeline): at k = 1 the loss within 1e-5 of a float64 forward, the
valid count exact, each gradient within a relative norm error of 1e-5 of
central finite differences of that forward (measured: at most 1.4e-7);
k = 2 and 4 bitwise k = 1, as the split promises.

Mismatches. Each mismatch is minimized (delta debugging on the program:
other programs and results dropped, then operations replaced by arguments
holding their float64 values, as long as the mismatch stays) and written
to the work directory as a standalone .mlir with its inputs (.npy), its
two configurations and values. Exit status 1 when any mismatch was found.
"""

import argparse
import itertools
import math
import os
import re
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
    out = {"add": x + y, "sub": x - y, "mul": x * y,
           "max": np.maximum(x, y)}[op.params["fn"]]
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
    a, b = ins
    A, B = np.asarray(a.ref, np.float64), np.asarray(b.ref, np.float64)
    K = a.shape[1]
    ma, mb = magnitude(a), magnitude(b)
    err = (a.err @ mb + ma @ b.err + a.err @ b.err
           + K * eps_of(a.dtype) * (ma @ mb))
    return Value(op.result, (a.shape[0], b.shape[1]), a.dtype, A @ B, err)


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


EVAL = {"accumulate": eval_accumulate, "unary": eval_unary, "binary": eval_binary, "reduce": eval_reduce,
        "compare": eval_compare, "logic": eval_logic, "select": eval_select,
        "int_binary": eval_int_binary, "int_to_float": eval_int_to_float,
        "float_cast": eval_float_cast, "gather": eval_gather,
        "matmul": eval_matmul, "transpose": eval_transpose,
        "reshape": eval_reshape, "slice": eval_slice}


def emit_op(op, vals, p):
    """MLIR lines of `op` (names prefixed with %`p`)."""
    n = lambda name: f"%{p}{name}"
    ins = [vals[o] for o in op.operands]
    out = vals[op.result]
    r, T = n(op.result), out.type()
    k = op.kind
    lines = []

    def generic(inputs, maps, iterators, body, init=None, elem=None):
        rank = len(iterators)
        init_name = init or f"{r}_e"
        if not init:
            lines.append(f"{init_name} = tensor.empty() : {T}")
        names = [n(x.name) for x in inputs]
        types = [x.type() for x in inputs]
        all_maps = ", ".join(maps)
        its = ", ".join(f'"{i}"' for i in iterators)
        args = ", ".join(f"%in{i}: {x.dtype}" for i, x in enumerate(inputs))
        args = (args + ", " if args else "") + f"%out: {out.dtype}"
        ins_txt = (f" ins({', '.join(names)} : {', '.join(types)})"
                   if inputs else "")
        lines.append(f"{r} = linalg.generic {{indexing_maps = [{all_maps}],"
                     f" iterator_types = [{its}]}}{ins_txt}"
                     f" outs({init_name} : {T}) {{")
        lines.append(f"^bb0({args}):")
        lines.extend("  " + b for b in body)
        lines.append(f"}} -> {T}")

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
        fn = {"add": "addi", "sub": "subi", "mul": "muli",
              "max": "maxsi"}[op.params["fn"]]
        generic(ins, [ident] * 3, ["parallel"] * rank,
                [f"%r = arith.{fn} %in0, %in1 : {out.dtype}",
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
    elif k == "matmul":
        lines.append(f"{r}_c = arith.constant 0.0 : {out.dtype}")
        lines.append(f"{r}_e = tensor.empty() : {T}")
        lines.append(f"{r}_f = linalg.fill ins({r}_c : {out.dtype}) "
                     f"outs({r}_e : {T}) -> {T}")
        a, b = ins
        lines.append(f"{r} = linalg.matmul ins({n(a.name)}, {n(b.name)} : "
                     f"{a.type()}, {b.type()}) outs({r}_f : {T}) -> {T}")
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
                          "transpose", "reshape", "slice"])
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
        if kind == "int_binary":
            a = self.operand(prog, vals, lambda v: v.dtype in INTS and
                             np.max(np.abs(v.ref), initial=0) < 2 ** 12,
                             lambda: (self.shape(), self.pick(INTS)))
            b = self.operand(prog, vals, lambda v: v.dtype == a.dtype and
                             v.shape == a.shape and
                             np.max(np.abs(v.ref), initial=0) < 2 ** 12,
                             lambda: (a.shape, a.dtype))
            return Op(kind, [a.name, b.name], res,
                      fn=self.pick(["add", "sub", "mul", "max"]))
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

class Runner:
    def __init__(self, build, workdir):
        self.bin = os.path.join(build, "bin")
        self.workdir = workdir

    def tool(self, name):
        return os.path.join(self.bin, name)

    def run(self, config, source, inputs, work):
        """Results of `source` under `config` (list of arrays), or an error
        string."""
        os.makedirs(work, exist_ok=True)
        options, extra = CONFIGS[config]
        src = os.path.join(work, "input.mlir")
        with open(src, "w") as f:
            f.write(source)
        paths = []
        for i, a in enumerate(inputs):
            paths.append(os.path.join(work, f"arg{i}.npy"))
            np.save(paths[-1], a)
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        if extra is None:  # ahead of time
            lib = os.path.join(work, "libstep.so")
            rest = options.replace("target=cpu", "").strip()
            done = subprocess.run(
                [self.tool("ga-compile"), src, "-o", lib, "--jobs=1"]
                + ([f"--pipeline-options={rest}"] if rest else []),
                capture_output=True, text=True)
            if done.returncode:
                return f"ga-compile failed:\n{done.stderr[-3000:]}"
            cmd = [self.tool("ga-exec"), lib, *paths, "--out-dir", out,
                   "--num-threads=1"]
        else:
            lowered = os.path.join(work, "lowered.mlir")
            done = subprocess.run(
                [self.tool("ga-opt"), src, f"--ga-pipeline={options}", "-o",
                 lowered], capture_output=True, text=True)
            if done.returncode:
                return f"ga-opt failed:\n{done.stderr[-3000:]}"
            cmd = [self.tool("ga-run"), lowered, *paths, "--out-dir", out,
                   *extra]
        done = subprocess.run(cmd, capture_output=True, text=True,
                              env=dict(os.environ, OMP_NUM_THREADS="1"))
        if done.returncode:
            return f"{os.path.basename(cmd[0])} exited with " \
                   f"{done.returncode}:\n{done.stdout[-1500:]}" \
                   f"{done.stderr[-3000:]}"
        m = re.search(r"wrote (\d+) result", done.stdout)
        count = int(m.group(1)) if m else 0
        return [np.load(os.path.join(out, f"result{i}.npy"))
                for i in range(count)]


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
        return f"different bits ({a.ravel()[:4]} against {b.ravel()[:4]}...)"
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

    def emit(self, microbatches):
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
                 f"      attributes {{microbatches = {microbatches} : i64}}",
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


def check_step(runner, step, work):
    """Findings of one generated step: k = 1 against the float64 loss and
    the finite-difference gradients, k = 2 and 4 against k = 1 bitwise."""
    findings = []
    inputs = step.params + [step.x, step.labels]
    base = None
    for k in [1, 2, 4]:
        if step.B % k:
            continue
        got = runner.run("cpu", step.emit(k), inputs,
                         os.path.join(work, f"k{k}"))
        if isinstance(got, str):
            findings.append(f"k={k}: {got.splitlines()[0]}\n{got}")
            continue
        if base is None:
            base = got
            loss = step.forward([p.astype(np.float64) for p in step.params])
            if abs(float(got[0]) - loss) > 1e-5 * max(1.0, abs(loss)):
                findings.append(f"k=1: loss {float(got[0])!r}, float64 "
                                f"{loss!r}")
            for i, g in enumerate(step.gradients()):
                err = np.linalg.norm(got[1 + i] - g) / max(
                    np.linalg.norm(g), 1e-12)
                # float32 sums of at most 64 terms (relative error about
                # 1e-7, measured up to 1.4e-7) against float64 central
                # differences (truncation and rounding below 1e-8).
                if not err <= 1e-5:
                    findings.append(f"k=1: gradient {i}: relative error "
                                    f"{err:.3g} against finite differences")
            count = int((step.labels != -100).sum())
            if int(got[-1]) != count:
                findings.append(f"k=1: count {int(got[-1])}, expected {count}")
        else:
            for i, (a, b) in enumerate(zip(got, base)):
                why = bitwise_mismatch(a, b)
                if why:
                    findings.append(f"k={k}: result {i} against k=1: {why}")
    return findings


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
    args = parser.parse_args()
    configs = args.configs.split(",")
    for c in configs:
        if c not in CONFIGS:
            sys.exit(f"difftest: error: --configs: unknown configuration "
                     f"'{c}' (expected one of {', '.join(CONFIGS)})")
    if args.count < 1 or args.bundle < 1 or args.ops < 1:
        sys.exit("difftest: error: --count, --bundle and --ops must be >= 1")
    workdir = args.workdir or tempfile.mkdtemp(prefix="difftest-")
    os.makedirs(workdir, exist_ok=True)
    runner = Runner(args.build, workdir)
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
              "2, 4 micro-batches", flush=True)
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
