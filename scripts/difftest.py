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
                 attention=unfused (the CUDA device program, run on the
                 CPU, with the attention as written as on the CPU)
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
import shutil
import sys
import tempfile
import time

import numpy as np

from ga_scripts.difftest.corpus import check_corpus
from ga_scripts.difftest.generator import Generator
from ga_scripts.difftest.minimizer import minimize, write_reproducer
from ga_scripts.difftest.runner import CONFIGS, Runner, check_bundle
from ga_scripts.difftest.steps import (StepProgram, check_step, find_mpirun,
                                       step_configs)
from ga_scripts.paths import BUILD, ROOT


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--count", type=int, default=200,
                        help="programs to generate")
    parser.add_argument("--bundle", type=int, default=8,
                        help="programs per compiled function")
    parser.add_argument("--ops", type=int, default=6,
                        help="at most this many operations per program")
    parser.add_argument("--configs", default=",".join(CONFIGS),
                        help="comma-separated, of: " + ", ".join(CONFIGS))
    parser.add_argument("--build", default=BUILD)
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
        paths = args.corpus or [os.path.join(ROOT, "examples"),
                                os.path.join(ROOT, "test")]
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
