"""The minimizer: delta debugging on a program that mismatches, and the
standalone reproducer it writes."""

import os

import numpy as np

from .emitter import bundle_expected, bundle_inputs, emit_bundle
from .oracle import evaluate
from .program import NP_TYPES, Op, Program, Value
from .runner import CONFIGS, check_bundle


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
