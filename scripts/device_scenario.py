#!/usr/bin/python3
"""A training step of real size fitted into a GPU of fixed size, end to end,
measured on the driver stand-in.

  python3 scripts/device_scenario.py [--build build] [--workdir DIR]
      [--budget-gib 16] [--batch 32] [--layers 24] [--dim 1024]
      [--heads 16] [--ffn 4096] [--seq 1024] [--vocab 50304]
      [--attention-key-tile N] [--precision f32|bf16-mixed]
      [--host-offload] [--host-bandwidth GBPS]

The default is GPT-2 355M's shape (24 layers, D 1024, 16 heads, F 4096,
S 1024, V 50304) trained with AdamW (the whole step: forward, backward,
clipping to a global norm, AdamW; examples/gen_tiny_gpt.py --train) at a
global batch of 32 sequences, on a GPU of 16 GiB:

  1. `ga-compile --target=cuda` with `memory-budget=BYTES
     choose-microbatches=true`: train-plan-remat chooses the micro-batch count k
     and the checkpoints for the least estimated time within the device
     budget (parameters, gradients, AdamW moments, activations, cuBLAS's
     workspace, the caching allocator's blocks) and says why (its remark,
     printed);
  2. the step library runs once through the Python binding against the
     driver stand-in (test/cuda-mock: device memory that the host cannot
     touch, every allocation counted, kernels not run), its inputs zeros;
     the stand-in's high-water mark of device memory is the measurement.

With --attention-key-tile N, the attention is computed over tiles of N
queries and keys (train.attention: no [B, H, S, S] scores stored for the
backward pass). With --precision bf16-mixed, every product reads bfloat16
copies of its operands (parameters, gradients and AdamW's moments stay
float32). With --host-offload, buffers the step does not read for a while
may go to pinned host memory and back (ga-gpu-offload-buffers; the copies
at --host-bandwidth GB/s): the planner weighs the copies' estimated delay
against recomputation, and the stand-in also checks that no copy races a
kernel or GEMM (its two streams' order).

Prints the choice, the predicted and the measured peak; exits 1 when the
measurement exceeds the budget or differs from the prediction. Not a test
(minutes, and the inputs' 5.7 GB copied into the stand-in's memory);
test/Integration/device-budget.test checks the same claims at small sizes.
"""

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time

from device_budget import Case
from ga_scripts.paths import PYTHON, ROOT, child_env

RUN = """
import sys, numpy as np
import ga_step
step = ga_step.load(sys.argv[1])
args = [np.zeros(s.shape, s.numpy_dtype) for s in step.signature.inputs]
step(*args)
"""


def main():
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--workdir", default=None)
    p.add_argument("--budget-gib", type=float, default=16.0)
    for name, default in (("batch", 32), ("layers", 24), ("dim", 1024),
                          ("heads", 16), ("ffn", 4096), ("seq", 1024),
                          ("vocab", 50304)):
        p.add_argument(f"--{name}", type=int, default=default)
    p.add_argument("--attention-key-tile", type=int, default=0,
                   help="attention over tiles of this many queries and "
                        "keys (0: as written)")
    p.add_argument("--precision", default="f32",
                   help="the pipeline's precision: f32 or bf16-mixed "
                        "(products of bfloat16 copies, the activations "
                        "kept for backward products as those copies)")
    p.add_argument("--host-offload", action="store_true",
                   help="let the step move buffers to host memory and back")
    p.add_argument("--host-bandwidth", type=float, default=20.0,
                   help="with --host-offload: the host-device bandwidth in "
                        "GB/s that decides which copies hide")
    args = p.parse_args()
    work = args.workdir or tempfile.mkdtemp(prefix="ga-device-scenario-")
    os.makedirs(work, exist_ok=True)
    budget = int(args.budget_gib * 2**30)
    shape = (f"B {args.batch}, S {args.seq}, V {args.vocab}, D {args.dim}, "
             f"H {args.heads}, F {args.ffn}, L {args.layers}")
    if args.attention_key_tile:
        shape += (f"; attention over tiles of {args.attention_key_tile} "
                  "queries and keys")
    if args.precision != "f32":
        shape += f"; precision {args.precision}"
    if args.host_offload:
        shape += f"; host offload at {args.host_bandwidth:g} GB/s"
    print(f"device_scenario: GPT training step ({shape}), AdamW, under a "
          f"device budget of {args.budget_gib:g} GiB ({budget} bytes)",
          flush=True)

    step = os.path.join(work, "step.mlir")
    with open(step, "w") as f:
        subprocess.run(
            [sys.executable, os.path.join(ROOT, "examples", "gen_tiny_gpt.py"),
             "--train", "--batch", str(args.batch), "--seq", str(args.seq),
             "--vocab", str(args.vocab), "--dim", str(args.dim), "--heads",
             str(args.heads), "--ffn", str(args.ffn), "--layers",
             str(args.layers)], stdout=f, check=True)
    # The compile and the stand-in's environment as device_budget.py's.
    case = Case("step", step,
                argparse.Namespace(build=args.build, workdir=work),
                options=f"attention-key-tile={args.attention_key_tile} "
                        f"precision={args.precision}"
                        # PTX kernels: no ptxas for the stand-in's run.
                        + (f" host-offload=true gpu-format=isa "
                           f"host-bandwidth={args.host_bandwidth}"
                           if args.host_offload else ""))
    start = time.time()
    lib, predicted, _ = case.compile(budget, auto=True)
    compiled = time.time() - start
    if lib is None:
        sys.exit(f"device_scenario: ga-compile failed:\n{case.stderr}")
    remark = re.search(r"remark: (train-plan-remat: .*)", case.stderr)
    # ga-compile's line of the planner's choice (train.memory_plan).
    plan = re.search(r"^memory_plan: .* (\d+) checkpoint\(s\) over (\d+) "
                     r"unit\(s\), recomputed ([\d.]+)% of the forward work",
                     case.stdout, re.M)
    offloaded = re.search(r"^memory_plan: .*, (\d+) buffer\(s\) offloaded "
                          r"to host memory \((\d+) bytes each way per step\)",
                          case.stdout, re.M)
    copies = re.search(r"copies that do not hide estimated at ([\d.]+)%",
                       case.stdout)
    if not (plan and case.chosen and predicted and remark) or (
            args.host_offload and not offloaded):
        sys.exit("device_scenario: cannot read the plan from:\n"
                 f"{case.stdout}{case.stderr}")
    k = int(case.chosen)
    print(f"compiled in {compiled:.0f} s; the planner: {remark.group(1)}",
          flush=True)

    # Zeros in memory rather than device_budget.py's .npy files (5.7 GB of
    # inputs at the default size).
    start = time.time()
    subprocess.run([sys.executable, "-c", RUN, lib],
                   env=child_env(PYTHON, env=case.env), check=True)
    with open(case.log) as f:
        log = f.read()
    measured = re.search(r"^peak device bytes: (\d+)", log, re.M)
    races = re.search(r"^races: (\d+)", log, re.M)
    if not measured:
        sys.exit(f"device_scenario: no device peak in {case.log}")
    measured = int(measured.group(1))
    gib = 2**30
    print(f"ran on the driver stand-in in {time.time() - start:.0f} s")
    print(f"choice: k = {k} micro-batches of "
          f"{args.batch // k} sequences, {plan.group(1)} "
          f"checkpoint(s) over {plan.group(2)} unit(s), recomputation "
          f"{plan.group(3)}% of the forward work; predicted "
          f"{predicted / gib:.2f} GiB, measured {measured / gib:.2f} GiB "
          f"({measured} bytes), budget {args.budget_gib:g} GiB")
    if offloaded:
        print(f"offloaded: {offloaded.group(1)} buffer(s), "
              f"{int(offloaded.group(2)) / 1e9:.2f} GB each way per step, "
              f"the copies' estimated delay "
              f"{copies.group(1) if copies else '0.0'}% of the forward "
              f"work's time; races between the streams on the stand-in: "
              f"{races.group(1) if races else '?'}")
    if measured > budget or measured != predicted:
        print("device_scenario: FAIL: the measured peak "
              + ("exceeds the budget" if measured > budget
                 else "is not the predicted one"))
        return 1
    if not races or int(races.group(1)):
        print("device_scenario: FAIL: the stand-in saw work on two streams "
              "out of order")
        return 1
    print("device_scenario: ok: the measured peak is the predicted one, "
          "within the budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
