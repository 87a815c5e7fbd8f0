"""Programs that once compiled to wrong values at the default settings, and
their variants, run in every configuration that must agree and checked
against float64 NumPy references that share no code with the compiler.

Two defects, each with variants (inputs in Inputs/miscompiles/):

- i1 masks in memory. A tensor of i1 is one byte per element in memory; a
  vector<8xi1> transfer stores and loads 8 packed bits in one byte. A mask
  written by vector code and read by scalar code (or the other way round)
  read bytes that were never written. mask-two-consumers.mlir (a mask read by
  a scalar consumer through linalg.index and by a vectorizable one),
  mask-causal.mlir (a mask written by scalar code, linalg.index, and read by
  two vectorizable consumers), mask-argument.mlir (a mask as a step
  argument, NumPy bool, read by an elementwise consumer and a reduction,
  and an i1 result).
- Fusion of a producer that reads its init (an accumulation `acc + g`) into
  a consumer that broadcasts it: the accumulation ran once per broadcast
  element. accumulate-broadcast-step.mlir (a row sum used twice: its
  gradient is 2 x, it was (2 + s) x), sum-over-max-step.mlir (a loss divided
  by its batch maximum), accumulate-consumers.mlir (accumulating producers
  under a broadcast, a reduction and a transpose, and two accumulations into
  the same function argument), accumulate-returned.mlir (a result computed
  into its argument and returned, which the CUDA target once failed to
  compile), view-returned.mlir (reshaped arguments returned, which both
  targets once failed to compile).

Configurations, each compiled with ga-opt --ga-pipeline and run by ga-run:
the default CPU pipeline; vectorize=false (scalar loops); fuse=false; the
CUDA target's device program emulated on the CPU (target=cuda
gpu-emulate=true gpu-split-reductions=false, so that its sums run in the
CPU's order). Every result of every configuration must equal the float64
reference within a relative 1e-6 per element (float32 sums of at most 64
terms of magnitude <= 10: the rounding stays below 1e-6 of the largest
term; the references for masks and counts are exact), and the mask results
bitwise.
"""

import argparse
import os
import subprocess

import numpy as np

from ga_scripts.reference_harness import Checker, run_ga_run

CONFIGS = {
    "cpu": "target=cpu",
    "cpu-scalar": "target=cpu vectorize=false",
    "cpu-unfused": "target=cpu fuse=false",
    "cuda-emulated": "target=cuda gpu-emulate=true gpu-split-reductions=false",
}


def mask_two_consumers(rng):
    labels = (np.arange(128) % 5).astype(np.int64)
    labels[rng.permutation(128)[:26]] = -100
    v = rng.standard_normal(128).astype(np.float32)
    mask = labels != -100
    x = v.astype(np.float64)
    return [labels, v], [np.where(mask, x, 0.0), np.where(mask, 0.0, x)]


def mask_argument(rng):
    m = rng.random((4, 64)) < 0.4
    x = rng.standard_normal((4, 64)).astype(np.float32)
    xd = x.astype(np.float64)
    return [m, x], [np.where(m, xd, -xd), np.where(m, xd, 0.0).sum(axis=1),
                    ~m]


def mask_causal(rng):
    x = rng.standard_normal((16, 32)).astype(np.float32)
    i, j = np.meshgrid(np.arange(16), np.arange(32), indexing="ij")
    mask = j <= i
    return [x], [np.where(mask, x.astype(np.float64), -1.0e9),
                 mask.sum(axis=1).astype(np.float64)]


def accumulate_broadcast_step(rng):
    w = rng.standard_normal((8, 6)).astype(np.float32)
    x = rng.standard_normal((8, 6)).astype(np.float32)
    wd, xd = w.astype(np.float64), x.astype(np.float64)
    return [w, x], [np.array(2.0 * (wd * xd).sum()), 2.0 * xd]


def sum_over_max_step(rng):
    w = rng.uniform(0.5, 1.5, (8, 6)).astype(np.float32)
    x = rng.uniform(0.5, 1.5, (8, 6)).astype(np.float32)
    wd, xd = w.astype(np.float64), x.astype(np.float64)
    per = (wd * xd).sum(axis=1)
    s, top = per.sum(), int(np.argmax(per))
    m = per[top]
    dper = np.full(8, 1.0 / m)
    dper[top] -= s / m**2
    return [w, x], [np.array(s / m), dper[:, None] * xd]


def accumulate_consumers(rng):
    a, g = (rng.standard_normal(8).astype(np.float32) for _ in range(2))
    x, a2, g2 = (rng.standard_normal((8, 6)).astype(np.float32)
                 for _ in range(3))
    ad, gd, xd, a2d, g2d = (v.astype(np.float64) for v in (a, g, x, a2, g2))
    return [a, g, x, a2, g2], [(ad + gd)[:, None] * xd,
                               (a2d + 2 * g2d).sum(axis=0),
                               2.0 * (a2d + xd).T]


def accumulate_returned(rng):
    acc, g = (rng.standard_normal((5, 3)).astype(np.float32)
              for _ in range(2))
    s = acc.astype(np.float64) + g.astype(np.float64)
    return [acc, g], [s, s * s]


def view_returned(rng):
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal(12).astype(np.float32)
    return [a, b], [a.reshape(12).astype(np.float64),
                    b.reshape(2, 6).astype(np.float64),
                    a.reshape(4, 3).astype(np.float64)]


PROGRAMS = {
    "mask-two-consumers": mask_two_consumers,
    "mask-argument": mask_argument,
    "mask-causal": mask_causal,
    "accumulate-broadcast-step": accumulate_broadcast_step,
    "sum-over-max-step": sum_over_max_step,
    "accumulate-consumers": accumulate_consumers,
    "accumulate-returned": accumulate_returned,
    "view-returned": view_returned,
}


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--ga-opt", required=True)
    parser.add_argument("--ga-run", required=True)
    parser.add_argument("--inputs", required=True)
    parser.add_argument("--workdir", required=True)
    args = parser.parse_args()
    check = Checker("miscompiles")
    rng = np.random.default_rng(0)
    for name, make in PROGRAMS.items():
        inputs, expected = make(rng)
        source = os.path.join(args.inputs, name + ".mlir")
        for config, options in CONFIGS.items():
            work = os.path.join(args.workdir, name, config)
            os.makedirs(work, exist_ok=True)
            lowered = os.path.join(work, "step.mlir")
            done = subprocess.run(
                [args.ga_opt, source, f"--ga-pipeline={options}", "-o",
                 lowered], capture_output=True, text=True)
            if done.returncode != 0:
                check.true(f"{name} {config}: compiles", False, done.stderr)
                continue
            got, _ = run_ga_run(args.ga_run, lowered, inputs, work)
            check.true(f"{name} {config}: {len(expected)} results",
                       len(got) == len(expected), f"got {len(got)}")
            for i, (g, e) in enumerate(zip(got, expected)):
                what = f"{name} {config}: result {i}"
                if e.dtype == np.bool_:
                    check.equal(what, g, e)
                else:
                    check.close(what, g, e, rtol=1e-6,
                                atol=1e-6 * float(np.max(np.abs(e))))
    check.finish()


if __name__ == "__main__":
    main()
