#!/usr/bin/python3
"""Device budgets with and without host offload, on the driver stand-in.

  python3 scripts/bench_offload.py [--build build] [--workdir DIR]
      [--cases tiny_gpt,gpt12] [--fractions 0.9,0.7,0.5,0.3,0.1]
      [--host-bandwidths 20,0.01]

For each step (device_budget.py's sources: the examples, their training
steps, the 12-layer GPT) and each budget (cuBLAS's workspace and a fraction
of the rest of the unplanned device peak), compiles the step for CUDA
with checkpoints only and with `host-offload=true` at each host-device
bandwidth (GB/s; PTX kernels: no ptxas, the stand-in needs none), runs
each once against the driver stand-in and prints, per budget: the
planner's checkpoints and recomputed share, the estimated delay of the
copies that do not hide (a share of the forward work's time, which the
planner weighs against the recomputed share), the buffers offloaded and
their bytes, the predicted and the measured device peak, and the races
the stand-in saw between the step's stream and the copy stream. A budget
the planner refuses shows the smallest peak it names.

Not a test (test/Tools/ga-compile-cuda-offload.test asserts the claims on
the tiny GPT); the step time needs a GPU (the copies' delay is estimated:
see docs/device-memory.md, "Host offload").
"""

import argparse
import os
import re
import sys
import tempfile

from device_budget import WORKSPACE, Case, sources
from ga_scripts.paths import ROOT


def plan_of(case):
    """(checkpoints, recomputed %, copies %, offloaded buffers, offloaded
    bytes) from ga-compile's memory_plan line."""
    plan = re.search(r"^memory_plan: .* (\d+) checkpoint\(s\) over \d+ "
                     r"unit\(s\), recomputed ([\d.]+)% of the forward work"
                     r"(?:, copies that do not hide estimated at ([\d.]+)%)?"
                     r"(?:.*, (\d+) buffer\(s\) offloaded to host memory "
                     r"\((\d+) bytes each way per step\))?", case.stdout, re.M)
    if not plan:
        return None
    return (int(plan.group(1)), plan.group(2) + "%",
            (plan.group(3) or "0.0") + "%",
            int(plan.group(4) or 0), int(plan.group(5) or 0))


def main():
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--workdir", default=None)
    p.add_argument("--cases", default="tiny_gpt,gpt12")
    p.add_argument("--fractions", default="0.9,0.7,0.5,0.3,0.1")
    p.add_argument("--host-bandwidths", default="20,0.01",
                   help="GB/s each way, one offload row per value")
    args = p.parse_args()
    args.workdir = args.workdir or tempfile.mkdtemp(prefix="ga-offload-")
    os.makedirs(args.workdir, exist_ok=True)
    table = sources(args.workdir)
    print("| step | budget | lever | checkpoints | recomputed | copies "
          "| offloaded | predicted | measured | races |\n"
          "|---|---|---|---|---|---|---|---|---|---|", flush=True)
    over = 0
    for name in args.cases.split(","):
        keep = Case(name, table[name], args, options="gpu-format=isa")
        levers = [("recompute", keep)]
        for gbps in args.host_bandwidths.split(","):
            levers.append((f"recompute + offload, {gbps} GB/s",
                           Case(f"{name}_offload_{gbps}", table[name], args,
                                options=f"gpu-format=isa host-offload=true "
                                        f"offload-min-bytes=0 "
                                        f"host-bandwidth={gbps}")))
        lib, _, _ = keep.compile(0)
        _, device = keep.measure(lib)
        print(f"| {name} | none | | | | | | | {device} | |", flush=True)
        fixed = WORKSPACE if device >= WORKSPACE else 0
        for fraction in (float(f) for f in args.fractions.split(",")):
            budget = fixed + int((device - fixed) * fraction)
            for lever, case in levers:
                lib, planned, smallest = case.compile(budget)
                if lib is None:
                    print(f"| {name} | {budget} | {lever} | no plan: the "
                          f"smallest peak is {smallest} | | | | | | |",
                          flush=True)
                    continue
                _, measured = case.measure(lib)
                with open(case.log) as f:
                    races = re.search(r"^races: (\d+)", f.read(), re.M)
                checkpoints, share, copies, buffers, moved = plan_of(case)
                over += measured > budget or measured != planned
                print(f"| {name} | {budget} | {lever} | {checkpoints} | "
                      f"{share} | {copies} | {buffers} ({moved} B) | "
                      f"{planned} | "
                      f"{measured} | {races.group(1) if races else '?'} |",
                      flush=True)
    if over:
        print(f"bench_offload: {over} plan(s) measured over the budget or "
              "off the prediction")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
