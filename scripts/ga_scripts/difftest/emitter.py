"""The emitter: each operation written as MLIR (the subset ga-opt
compiles), and bundles of programs as one function."""


import numpy as np

from .oracle import BINARY, INT_ARITH, NARROW_FNS, UNARY
from .program import NP_TYPES, Value, affine


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
