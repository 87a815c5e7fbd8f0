"""The generator: random valid programs, each operation chosen among
those whose operands exist, its shapes and types drawn."""


import numpy as np

from .oracle import (BINARY, EVAL, NARROW_FNS, NARROW_INT_FNS, UNARY,
                     evaluate, magnitude)
from .program import DIMS, FLOATS, INTS, NP_TYPES, Op, Program, Value


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
