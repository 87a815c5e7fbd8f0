#!/usr/bin/python3
"""Device memory under `memory-budget` on the CUDA target, measured three
ways without a GPU (a report, not a test).

For each step: ga-compile --target=cuda compiles it without a budget and
at budgets below its unplanned device peak; ga-exec runs
each library once against the driver stand-in (test/cuda-mock: device
memory mapped, kernels counted, not run). Per budget it prints

  predicted  the planner's peak (`planned peak`: the memory model of the
             bufferized step, its buffers and arguments);
  step       the runtime's count of the step's own buffers
             (`step_peak_bytes`, each rounded to 512 bytes);
  device     the stand-in's high-water mark of device memory: everything
             cuMemAlloc'd (the inputs copied in, the step's buffers, the
             caching allocator's freed blocks kept for reuse, cuBLAS's
             fixed 32 MiB workspace, which the budget covers too); the
             runtime's own count of it, ga-exec's budget_peak_bytes, must
             be the same to the byte (--check);

and whether the device peak is over the budget. The budgets are the
workspace and 95% down to 45% of the rest of the unplanned peak. A budget
the planner
refuses is replaced by the smallest peak it says it reaches. The lowest
budget is tried once more with `choose-microbatches=true` (the planner chooses
the micro-batch count with the checkpoints). The inputs
are zeros of the signature's shapes: the stand-in runs no kernel.

  python3 scripts/device_budget.py --build build --workdir /tmp/budget
        [--cases mlp,tiny_gpt,mlp_train,tiny_gpt_train,gpt12,
                 tiny_gpt_attention] [--check]
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np

from ga_scripts.paths import ROOT
FRACTIONS = (0.95, 0.8, 0.65, 0.45)
# cuBLAS's workspace (lib/Runtime/CUDA/Blas.cpp).
WORKSPACE = 32 << 20


def sources(workdir):
    """name: the step's source (a 12-layer GPT written by the generator)."""
    deep = os.path.join(workdir, "gpt12.mlir")
    if not os.path.exists(deep):
        with open(deep, "w") as f:
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "examples", "gen_tiny_gpt.py"),
                            "--layers", "12"], check=True, stdout=f)
    examples = os.path.join(ROOT, "examples")
    return {"mlp": os.path.join(examples, "mlp.mlir"),
            "tiny_gpt": os.path.join(examples, "tiny_gpt.mlir"),
            "mlp_train": os.path.join(examples, "mlp_train.mlir"),
            "tiny_gpt_train": os.path.join(examples, "tiny_gpt_train.mlir"),
            "gpt12": deep,
            "tiny_gpt_attention": os.path.join(examples, "tiny_gpt.mlir")}


# Cases that compile a source with more pipeline options: the tiny GPT's
# attention as train.attention over tiles of 4 keys.
CASE_OPTIONS = {"tiny_gpt_attention": "attention-key-tile=4"}


class Case:
    def __init__(self, name, source, args, options=None):
        """`options`: more --ga-pipeline options (default: CASE_OPTIONS's
        for `name`)."""
        self.name, self.source, self.args = name, source, args
        self.options = (CASE_OPTIONS.get(name, "") if options is None
                        else options)
        self.bin = os.path.join(args.build, "bin")
        mock = os.path.join(args.build, "test", "cuda-mock")
        self.log = os.path.join(args.workdir, f"{name}.mock.log")
        self.env = dict(os.environ, LD_LIBRARY_PATH=mock,
                        GA_CUBLAS_LIBRARY=os.path.join(mock, "libcuda.so.1"),
                        GA_MOCK_CUDA_LOG=self.log)
        self.inputs = []
        # Where ga-exec's budget_peak_bytes is not the stand-in's peak.
        self.mismatches = []

    def compile(self, budget, auto=False):
        """(library, planned peak, refusal's smallest peak); the library is
        None when the compile fails. `auto`: choose-microbatches=true."""
        lib = os.path.join(self.args.workdir,
                           f"lib{self.name}_{budget}{'_auto' if auto else ''}"
                           ".so")
        options = f"check-labels=false {self.options}" + (
            f" memory-budget={budget}" if budget else "") + (
            " choose-microbatches=true" if auto else "")
        done = subprocess.run(
            [os.path.join(self.bin, "ga-compile"), "--target=cuda",
             self.source, "-o", lib, "--pipeline-options", options],
            capture_output=True, text=True)
        self.stdout, self.stderr = done.stdout, done.stderr
        # ga-compile's line of what the planner chose (train.memory_plan).
        plan = re.search(r"^memory_plan: microbatches (\d+) \((\w+)\), "
                         r"planned peak (\d+) bytes", done.stdout, re.M)
        planned = plan.group(3) if plan else None
        self.chosen = (plan.group(1) if plan and plan.group(2) == "auto"
                       else None)
        smallest = re.search(r"the smallest peak the planner reaches is "
                             r"(\d+) bytes", done.stderr)
        if done.returncode:
            if not smallest:
                sys.exit(f"device_budget.py: {self.name} at budget {budget}:"
                         f"\n{done.stderr[-2000:]}")
            return None, None, int(smallest.group(1))
        return lib, int(planned) if planned else None, None

    def measure(self, lib):
        """(step_peak_bytes, the stand-in's device peak) of one step."""
        if not self.inputs:
            signature = subprocess.run(
                [os.path.join(self.bin, "ga-exec"), lib, "--signature"],
                capture_output=True, text=True, env=self.env, check=True)
            types = {"f32": np.float32, "f64": np.float64,
                     "i32": np.int32, "i64": np.int64}
            for i, (dtype, shape) in enumerate(re.findall(
                    r"^input \d+ (\w+) (\S+)", signature.stdout, re.M)):
                dims = () if shape == "scalar" else tuple(
                    int(d) for d in shape.split("x"))
                path = os.path.join(self.args.workdir,
                                    f"{self.name}_arg{i}.npy")
                np.save(path, np.zeros(dims, dtype=types[dtype]))
                self.inputs.append(path)
        done = subprocess.run([os.path.join(self.bin, "ga-exec"), lib,
                               *self.inputs], capture_output=True, text=True,
                              env=self.env)
        if done.returncode:
            sys.exit(f"device_budget.py: ga-exec {lib}:\n{done.stderr}")
        step = int(re.search(r"step_peak_bytes: (\d+)", done.stdout).group(1))
        device = int(re.search(r"^peak device bytes: (\d+)",
                               open(self.log).read(), re.M).group(1))
        # The runtime's own count of the same quantity (budget_peak_bytes,
        # what the budget bounds): it must be the stand-in's, to the byte.
        reported = re.search(r"^budget_peak_bytes: (\d+)", done.stdout, re.M)
        if not reported or int(reported.group(1)) != device:
            self.mismatches.append(
                f"{self.name}: ga-exec's budget_peak_bytes "
                f"{reported.group(1) if reported else 'missing'}, the "
                f"stand-in's high-water mark {device}")
        return step, device


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--cases", default="mlp,tiny_gpt")
    parser.add_argument("--check", action="store_true",
                        help="exit with status 1 unless every budget the "
                        "planner accepts is kept on the device and its "
                        "prediction is the device's peak, and every budget "
                        "it refuses is below the smallest peak it names")
    args = parser.parse_args()
    problems = []
    os.makedirs(args.workdir, exist_ok=True)
    table = sources(args.workdir)
    print("| step | budget | predicted | step buffers | device | device "
          "over the budget |\n|---|---|---|---|---|---|")
    for name in args.cases.split(","):
        case = Case(name, table[name], args)
        lib, _, _ = case.compile(0)
        step, device = case.measure(lib)
        print(f"| {name} | none | | {step} | {device} | |")
        # The workspace whole, a fraction of the rest.
        fixed = WORKSPACE if device >= WORKSPACE else 0

        def budget_at(fraction):
            return fixed + int((device - fixed) * fraction)

        for fraction in FRACTIONS:
            budget = budget_at(fraction)
            lib, planned, smallest = case.compile(budget)
            if lib is None:
                if smallest <= budget:
                    problems.append(f"{name}: budget {budget} refused with "
                                    f"a smallest peak {smallest} within it")
                budget = smallest
                lib, planned, _ = case.compile(budget)
                if lib is None:
                    break
            step, device_peak = case.measure(lib)
            over = device_peak / budget - 1
            if device_peak > budget or planned != device_peak:
                problems.append(f"{name}: budget {budget}: predicted "
                                f"{planned}, device peak {device_peak}")
            print(f"| {name} | {budget} | {planned} | {step} | {device_peak} "
                  f"| {over:+.0%} |")
            if budget != budget_at(fraction):
                break  # the smallest reachable peak: lower ones refuse too
        # The lowest budget again, the micro-batch count the planner's.
        budget = budget_at(FRACTIONS[-1])
        lib, planned, smallest = case.compile(budget, auto=True)
        if lib is None:
            if smallest <= budget:
                problems.append(f"{name}: budget {budget}, choose-"
                                f"microbatches, refused with a smallest peak "
                                f"{smallest} within it")
            print(f"| {name} | {budget}, choose-microbatches=true: refused, "
                  f"the smallest reachable peak {smallest} | | | | |")
            continue
        step, device_peak = case.measure(lib)
        if device_peak > budget or planned != device_peak:
            problems.append(f"{name}: budget {budget}, choose-"
                            f"microbatches: predicted {planned}, device peak "
                            f"{device_peak}")
        k = case.chosen or "?"
        print(f"| {name} | {budget}, choose-microbatches=true (k = {k}) | "
              f"{planned} | {step} | {device_peak} | "
              f"{device_peak / budget - 1:+.0%} |")
        problems += case.mismatches
    if args.check:
        print("device_budget: " + ("; ".join(problems) if problems else
                                   "ok: every budget kept on the device, "
                                   "every prediction the device's peak, "
                                   "every budget_peak_bytes the device's"))
        sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
