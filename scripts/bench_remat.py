#!/usr/bin/python3
"""Rematerialization benchmark: the tiny-GPT step under memory budgets.

For GPT depths (default 4, 12, 24 layers; B=4, S=64, V=256, D=64, 4 heads,
F=256) and budgets from the smallest feasible one to the unplanned peak:
  * planned: train-plan-remat's planned peak (the memory model's exact
    prediction of the compiled step), its checkpoints and the share of the
    forward work it recomputes, its search time (the dynamic program on
    the chain model) and the time of the plans it compiled to measure them;
  * measured: the peak the runtime counts (ga-run --report-memory
    budget_peak_bytes: step buffers + arguments) and the step time (minimum over
    --repeat runs, one thread), as a ratio to the unplanned step's time,
    measured in the same run;
  * the smallest feasible budget, as the planner states it when a budget
    of one byte is refused;
  * the MILP's optimum on the same chain of units: train-plan-remat's
    export-graph writes the chosen plan's units as a ga-remat graph (each
    unit as its run and its boundary alone) with the memory its chain
    model gives the held values at that budget; ga-remat --milp solves it
    (time-limited; graphs of more than --milp-max-nodes nodes are skipped).
    Its schedules may be multi-level (a value recomputed from a value
    recomputed earlier in the backward pass), which single-level segments
    cannot express. Solved twice: with --stage-memory=held (milp%: the
    values made and used within a stage do not count, a model more lenient
    than the planner's, so the gap bounds what a better search could save
    from below) and with --stage-memory=computed (milpc%: every value a
    stage of the backward pass computes counts at once, as the planner's
    chain model counts a checkpointed segment: the planner's own plan is a
    solution, so milpc% is at most the planner's share up to the time
    limit, and the gap is what multi-level schedules and a better search
    gain in the planner's own model). Both work on the chain model, whose
    offset to the exact peak varies along the plans: a share the model
    allows may not fit when compiled (report-plans=true shows it). So the
    held MILP's plan is also compiled (milpv%): the units its schedule
    computes again in the backward pass, as checkpointed segments
    (train-plan-remat plan=...; a schedule that recomputes a value from a
    recomputed one becomes the single-level plan of the same units),
    measured by the memory model; where it peaks over the budget, the
    MILP is solved again with its budget less the excess, up to four
    solves (milpv: "fits (n)" after n solves, or why not). milpv% is the
    compiled plan's recomputed share as the planner counts it.
A PNG (matplotlib; Debian: python3-matplotlib) plots the measured peak and
the step-time ratio against the budget for each depth.
Not a test: nothing is asserted, but a measured peak above its budget is
printed as OVER.

Rerun: python3 scripts/bench_remat.py [--build build] [--depths 4,12,24]
       [--repeat 5] [--png docs/remat.png] [--json out.json]
       [--milp-seconds 10] [--milp-max-nodes 80]
"""

import argparse
import json
import os
import re
import subprocess
import sys
import tempfile
import time

import numpy as np

from ga_scripts.paths import ROOT
from ga_scripts.reference_harness import save_arrays
from ga_scripts.tiny_gpt import inputs, write_step

SIZE = dict(batch=4, seq=64, vocab=256, dim=64, heads=4, ffn=256)


def ga_run(binary, path, args, extra):
    """Runs ga-run; returns (stdout, stderr, returncode, seconds)."""
    start = time.time()
    proc = subprocess.run([binary, path, *args, *extra], capture_output=True,
                          text=True)
    return proc.stdout, proc.stderr, proc.returncode, time.time() - start


def number(pattern, text, cast=int):
    match = re.search(pattern, text, re.M)
    return cast(match.group(1)) if match else None


def milp_share(build, path, budget, seconds, max_nodes):
    """The MILP's recomputed shares (percent of the forward work) on the
    chain of units that train-plan-remat plans at `budget`, with stage
    memory held and computed: [(share, status)] * 2, (None, why) where it
    is not solved."""
    graph = f"{path}.b{budget}.json"
    proc = subprocess.run(
        [os.path.join(build, "bin", "ga-opt"), path,
         f"--train-plan-remat=memory-budget={budget} export-graph={graph}",
         "-o", os.devnull], capture_output=True, text=True)
    if proc.returncode:
        return [(None, "not planned")] * 3
    with open(graph) as f:
        meta = json.load(f)
    if len(meta["nodes"]) > max_nodes:
        return [(None, f"{len(meta['nodes'])} nodes")] * 3
    if meta["budget"] <= 0:
        return [(None, "no memory left")] * 3

    # Every output held: the work with no remat.
    held, _, _ = solve_milp(build, graph, 10**15, seconds, max_nodes)
    if held is None:
        return [(None, "not solved")] * 3
    shares, schedule = [], None
    for memory in ("held", "computed"):
        cost, status, stdout = solve_milp(build, graph, meta["budget"],
                                          seconds, max_nodes, memory)
        if memory == "held" and cost is not None:
            schedule = stdout
        shares.append((None, str(status)) if cost is None else
                      (100 * (cost - held) / meta["forward_cost"], status))
    shares.append(milp_verified(build, path, graph, meta, budget, seconds,
                                max_nodes, schedule))
    return shares


def solve_milp(build, graph, limit, seconds, max_nodes, memory="held"):
    """ga-remat --milp --schedule on `graph` within `limit` bytes: (cost,
    status, its output); cost None, status why, where it is not solved."""
    out = subprocess.run(
        [os.path.join(build, "bin", "ga-remat"), graph,
         f"--budget={limit}", "--milp", f"--time-limit={seconds}",
         f"--milp-max-nodes={max_nodes}", f"--stage-memory={memory}",
         "--schedule"], capture_output=True, text=True)
    status = re.search(r"^status: (\w+)", out.stdout, re.M)
    cost = re.search(r"^recompute_cost: ([0-9.e+-]+)", out.stdout, re.M)
    if out.returncode or not status or not cost:
        return (None, (out.stdout + out.stderr).strip().splitlines()[-1:],
                out.stdout)
    return float(cost.group(1)), status.group(1), out.stdout


def recomputed_units(schedule, nodes):
    """(the units whose run, node 2i of the exported graph, a MILP schedule
    of ga-remat --schedule computes again in the backward pass, in a stage
    other than its own adjoint's; the units whose boundary, node 2i + 1,
    it keeps from the forward pass)."""
    units, held = set(), set()
    for k, kept, computed in re.findall(
            r"^stage (\d+) \(adjoint of node \d+\): held([\d ]*); "
            r"computed([\d ]*)$", schedule, re.M):
        own = nodes - 1 - int(k)
        for node in map(int, computed.split()):
            if int(k) > 0 and node != own and node % 2 == 0:
                units.add(node // 2)
        # Held at the start of the first backward stage: kept from the
        # forward pass (later stages also hold what they recomputed).
        held.update(node // 2 for node in map(int, kept.split())
                    if int(k) == 1 and node % 2 == 1)
    return sorted(units), held


def segments(units, held=()):
    """'a-b,c' for the sorted unit indices: consecutive ones joined into a
    segment, which ends at a unit whose boundary is `held`."""
    pieces, start = [], None
    for i, u in enumerate(units):
        if start is None:
            start = u
        if i + 1 == len(units) or units[i + 1] != u + 1 or u in held:
            pieces.append(f"{start}-{u}" if u != start else f"{start}")
            start = None
    return ",".join(pieces)


def milp_verified(build, path, graph, meta, budget, seconds, max_nodes,
                  schedule, rounds=4):
    """The held MILP's plan compiled: its recomputed units as checkpointed
    segments (train-plan-remat plan=...), measured by the memory model. Where
    it peaks over the budget, the MILP is solved again with its budget less
    the excess (at most `rounds` solves; `schedule`: the first solve's
    output, None where it was not solved). (share %, status): the compiled
    plan's recomputed share, as the planner counts it."""
    limit = meta["budget"]
    for solves in range(1, rounds + 1):
        if solves > 1:
            cost, _, schedule = solve_milp(build, graph, limit, seconds,
                                           max_nodes)
            schedule = schedule if cost is not None else None
        if schedule is None:
            return None, f"unsolved at {limit}"
        plan = segments(*recomputed_units(schedule, len(meta["nodes"])))
        proc = subprocess.run(
            [os.path.join(build, "bin", "ga-opt"), path,
             f"--train-plan-remat=memory-budget={budget} plan={plan}",
             "-o", os.devnull], capture_output=True, text=True)
        if proc.returncode == 0:
            share = re.search(r"recomputed ([0-9.]+)% of the forward work",
                              proc.stderr)
            return (float(share.group(1)) if share else None,
                    f"fits ({solves})")
        peak = re.search(r"peaks at (\d+) bytes", proc.stderr)
        if not peak:
            return None, "not compiled"
        limit -= int(peak.group(1)) - budget
        if limit <= 0:
            return None, "no memory left"
    return None, f"over ({rounds})"


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(ROOT, "build"))
    parser.add_argument("--depths", default="4,12,24")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--png", default=None,
                        help="write the plot here (default: none)")
    parser.add_argument("--json", default=None)
    parser.add_argument("--milp-seconds", type=float, default=10,
                        help="the MILP's time limit per solve")
    parser.add_argument("--milp-max-nodes", type=int, default=80,
                        help="larger graphs are not solved by the MILP")
    args = parser.parse_args()
    binary = os.path.join(args.build, "bin", "ga-run")
    if not os.path.exists(binary):
        sys.exit(f"bench_remat: {binary} not found (build first, or pass "
                 "--build)")
    depths = [int(d) for d in args.depths.split(",")]
    work = tempfile.mkdtemp(prefix="ga-bench-remat-")
    rows = []
    print(f"model: B={SIZE['batch']} S={SIZE['seq']} V={SIZE['vocab']} "
          f"D={SIZE['dim']} H={SIZE['heads']} F={SIZE['ffn']}; one thread; "
          f"step time min of {args.repeat}")
    header = (f"{'L':>3} {'budget':>10} {'planned':>10} {'measured':>10} "
              f"{'fits':>4} {'ckpts':>5} {'recomp%':>7} {'step ms':>8} "
              f"{'x plain':>7} {'solve s':>7} {'measure s':>9} "
              f"{'compiled':>8} {'milp%':>6} {'milp':>8} {'milpc%':>6} "
              f"{'milpc':>8} {'milpv%':>6} {'milpv':>10}")
    for L in depths:
        size = (*SIZE.values(), L)
        path = write_step(os.path.join(work, f"gpt{L}.mlir"), size)
        params, tokens, labels = inputs(*size, np.random.default_rng(L))
        arrays = save_arrays(params + [tokens, labels],
                             os.path.join(work, f"gpt{L}_arg"))
        common = ["--report-memory", "--num-threads", "1", "--repeat",
                  str(args.repeat)]
        out, err, rc, _ = ga_run(binary, path, arrays, common)
        if rc:
            sys.exit(f"bench_remat: ga-run failed on L={L}:\n{err}")
        unplanned = number(r"^budget_peak_bytes: (\d+)", out)
        plain_ms = number(r"min ([0-9.]+)\)", out, float)
        _, err, rc, _ = ga_run(binary, path, arrays,
                               ["--memory-budget=1"])
        smallest = number(r"the smallest peak the planner reaches is (\d+)",
                          err)
        if rc == 0 or smallest is None:
            sys.exit(f"bench_remat: L={L}: a budget of one byte was not "
                     f"refused with the smallest feasible budget:\n{err}")
        print(f"\nL={L}: unplanned peak {unplanned} B, step {plain_ms:.2f} "
              f"ms; smallest feasible budget {smallest} B "
              f"({smallest / unplanned:.2f}x)")
        print(header)
        budgets = sorted({smallest, *[smallest + (unplanned - smallest) * q
                                      // 4 for q in (1, 2, 3)]})
        for budget in budgets:
            out, err, rc, seconds = ga_run(
                binary, path, arrays, common + [f"--memory-budget={budget}"])
            if rc:
                print(f"{L:>3} {budget:>10} failed: {err.strip()[:200]}")
                continue
            remark = re.search(
                r"(\d+) checkpoints over \d+ units \(recomputed ([0-9.]+)% "
                r"of the forward work\); planned peak (\d+) bytes; solved "
                r"in ([0-9.]+) s; (\d+) plans compiled and measured in "
                r"([0-9.]+) s", err)
            measured = number(r"^budget_peak_bytes: (\d+)", out)
            step_ms = number(r"min ([0-9.]+)\)", out, float)
            row = dict(layers=L, budget=budget, unplanned=unplanned,
                       smallest=smallest, plain_ms=plain_ms,
                       measured=measured, step_ms=step_ms,
                       checkpoints=int(remark.group(1)),
                       recomputed=float(remark.group(2)),
                       planned=int(remark.group(3)),
                       solve_s=float(remark.group(4)),
                       compiled=int(remark.group(5)),
                       measure_s=float(remark.group(6)), wall_s=seconds)
            ((share, status), (strict, strict_status),
             (verified, verified_status)) = milp_share(
                args.build, path, budget, args.milp_seconds,
                args.milp_max_nodes)
            row.update(milp_recomputed=share, milp_status=status,
                       milp_computed_recomputed=strict,
                       milp_computed_status=strict_status,
                       milp_verified_recomputed=verified,
                       milp_verified_status=verified_status)
            rows.append(row)
            fits = "yes" if measured <= budget else "OVER"
            milp = f"{share:>6.1f}" if share is not None else f"{'-':>6}"
            strict_text = (f"{strict:>6.1f}" if strict is not None
                           else f"{'-':>6}")
            verified_text = (f"{verified:>6.1f}" if verified is not None
                             else f"{'-':>6}")
            print(f"{L:>3} {budget:>10} {row['planned']:>10} "
                  f"{measured:>10} {fits:>4} {row['checkpoints']:>5} "
                  f"{row['recomputed']:>7.1f} {step_ms:>8.2f} "
                  f"{step_ms / plain_ms:>7.2f} {row['solve_s']:>7.3f} "
                  f"{row['measure_s']:>9.1f} {row['compiled']:>8} "
                  f"{milp} {status:>8} {strict_text} {strict_status:>8} "
                  f"{verified_text} {verified_status:>10}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump(rows, f, indent=1)
    if args.png:
        try:
            import matplotlib
            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError:
            print("no matplotlib (Debian: python3-matplotlib): no plot")
            return
        fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2))
        for L in depths:
            mine = [r for r in rows if r["layers"] == L]
            if not mine:
                continue
            unplanned = mine[0]["unplanned"]
            x = [r["budget"] / unplanned for r in mine]
            left.plot(x, [r["measured"] / unplanned for r in mine], "o-",
                      label=f"L={L}")
            right.plot(x, [r["step_ms"] / r["plain_ms"] for r in mine], "o-",
                       label=f"L={L}")
        left.plot([0, 1], [0, 1], "k:", label="budget")
        left.set_xlabel("budget / unplanned peak")
        left.set_ylabel("measured peak / unplanned peak")
        left.set_title("Peak within the budget")
        right.set_xlabel("budget / unplanned peak")
        right.set_ylabel("step time / unplanned step time")
        right.set_title("Time paid for recomputation")
        for ax in (left, right):
            ax.grid(alpha=0.3)
            ax.legend()
        fig.tight_layout()
        fig.savefig(args.png, dpi=110)
        print(f"\nwrote {args.png}")


if __name__ == "__main__":
    main()
