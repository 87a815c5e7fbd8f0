#!/usr/bin/python3
"""Loss and gradient-norm curves of one training run under many schedules.

The experiment behind gradient-accumulation bug reports: the same global
batch (16 sequences) split as ranks x micro-batches x rows, 1x1x16, 1x16x1,
1x4x4, 2x2x4 and 4x1x4, trains the tiny GPT (examples/tiny_gpt_train.mlir,
AdamW, gradients clipped to norm 1) on real, padded text (the Debian
`fortunes` collection, scripts/make_corpus.py) with ga-train. With ga-opt's
exact schedule every curve is the full batch's; with the naive one (each
micro-batch's and rank's mean loss averaged) they are not, and the
gradient norm jumps with the schedule.

  python3 scripts/reproduce.py                 # 300 steps, figures in docs/
  python3 scripts/reproduce.py --steps 20 --check --out /tmp/r
  python3 scripts/reproduce.py --grpo --steps 30 --out /tmp/g   # RL

Prints the table of final losses and the largest differences to the full
batch's curves; --plot writes the PNG (matplotlib); --check exits with
status 1 unless every exact curve is within --tolerance of the full batch's
(bitwise for the schedules without ranks), and every naive curve is not.
Schedules with ranks need mpirun (Open MPI); without it they are left out,
with a note.
"""

import argparse
import csv
import json
import os
import shutil
import subprocess
import sys
import time

from ga_scripts.paths import ROOT
SCHEDULES = [(1, 1, 16), (1, 16, 1), (1, 4, 4), (2, 2, 4), (4, 1, 4)]


def default_mpirun():
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return None
    version = subprocess.run([mpirun, "--version"], capture_output=True,
                             text=True)
    if "Open MPI" in version.stdout + version.stderr or \
            "OpenRTE" in version.stdout + version.stderr:
        return f"{mpirun} --oversubscribe --allow-run-as-root"
    return mpirun


def read_log(path):
    rows = list(csv.DictReader(open(path)))
    return {
        "loss": [float(r["loss"]) for r in rows],
        "grad_norm": [float(r["grad_norm"]) for r in rows],
        "tokens": [int(r["tokens"]) for r in rows],
        "step_ms": [float(r["step_ms"]) for r in rows],
    }


def label(schedule, naive):
    r, k, b = schedule
    return f"{r}x{k}x{b} {'naive' if naive else 'exact'}"


def max_diff(a, b):
    return max(abs(x - y) for x, y in zip(a, b))


def run_grpo(args):
    """scripts/reproduce_grpo.py with the front end's Python."""
    locate = subprocess.run([os.path.join(ROOT, "scripts",
                                          "setup_frontend.sh"), "--locate"],
                            capture_output=True, text=True)
    python = locate.stdout.strip()
    if locate.returncode or not python:
        sys.exit("reproduce.py: --grpo needs the PyTorch front end "
                 "(scripts/setup_frontend.sh): " + locate.stderr.strip())
    command = [python, os.path.join(ROOT, "scripts", "reproduce_grpo.py"),
               "--build", os.path.join(ROOT, "build"), "--workdir", args.out,
               "--steps", str(args.steps),
               "--csv", os.path.join(args.out, "grpo_curves.csv")]
    if args.check:
        command.append("--check")
    env = dict(os.environ, PYTHONPATH=os.path.join(ROOT, "python"))
    return subprocess.run(command, env=env).returncode


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--ga-train",
                        default=os.path.join(ROOT, "build", "bin", "ga-train"))
    parser.add_argument("--model",
                        default=os.path.join(ROOT, "examples",
                                             "tiny_gpt_train.mlir"))
    parser.add_argument("--data", help="a ga-train dataset (default: "
                        "scripts/make_corpus.py into OUT/data)")
    parser.add_argument("--out", default=os.path.join(ROOT, "build", "train"),
                        help="logs (and the data) go here")
    parser.add_argument("--steps", type=int, default=300)
    parser.add_argument("--lr", type=float, default=2e-3)
    parser.add_argument("--warmup", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--mpirun", default=default_mpirun(),
                        help="launcher of the schedules with ranks (default: "
                             "Open MPI's mpirun, if found)")
    parser.add_argument("--tolerance", type=float, default=1e-6,
                        help="largest relative loss difference of an exact "
                             "curve (default 1e-6)")
    parser.add_argument("--check", action="store_true")
    parser.add_argument("--plot", help="write the curves to this PNG")
    parser.add_argument("--table", help="write the table (markdown) here")
    parser.add_argument("--grpo", action="store_true",
                        help="the GRPO-style run instead (scripts/"
                        "reproduce_grpo.py, with the PyTorch front end: "
                        "--steps, --out, --check)")
    args = parser.parse_args()
    if args.grpo:
        return run_grpo(args)
    if args.steps < 1:
        parser.error(f"--steps must be at least 1, got {args.steps}")
    os.makedirs(args.out, exist_ok=True)

    data = args.data
    if not data:
        data = os.path.join(args.out, "data")
        if not os.path.exists(os.path.join(data, "dataset.json")):
            subprocess.run([sys.executable,
                            os.path.join(ROOT, "scripts", "make_corpus.py"),
                            "--out", data, "--seq-len", "64"], check=True)

    runs = {}
    for schedule in SCHEDULES:
        r, k, _ = schedule
        if r > 1 and not args.mpirun:
            print(f"reproduce.py: no mpirun: {r}x{k}x{schedule[2]} left out")
            continue
        for naive in ([False, True] if r * k > 1 else [False]):
            name = label(schedule, naive).replace(" ", "_")
            log = os.path.join(args.out, name + ".csv")
            command = [args.ga_train, args.model, "--data", data,
                       "--steps", str(args.steps), "--lr", str(args.lr),
                       "--warmup", str(args.warmup), "--seed", str(args.seed),
                       "--microbatches", str(k), "--data-parallel", str(r),
                       "--log", log, "--print-every", "0"]
            if naive:
                command.append("--naive")
            if r > 1:
                command = args.mpirun.split() + ["-np", str(r)] + command
            start = time.time()
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode:
                sys.exit(f"reproduce.py: {' '.join(command)} failed:\n"
                         f"{done.stdout}{done.stderr}")
            runs[(schedule, naive)] = read_log(log)
            print(f"reproduce.py: {label(schedule, naive):>16}: final loss "
                  f"{runs[(schedule, naive)]['loss'][-1]:.6f} "
                  f"({time.time() - start:.1f} s)", flush=True)

    base = runs[(SCHEDULES[0], False)]
    rows = []
    failures = []
    for (schedule, naive), run in runs.items():
        loss_diff = max(abs(a - b) / abs(b)
                        for a, b in zip(run["loss"], base["loss"]))
        norm_diff = max(abs(a - b) / abs(b)
                        for a, b in zip(run["grad_norm"], base["grad_norm"]))
        bitwise = run["loss"] == base["loss"] and \
            run["grad_norm"] == base["grad_norm"]
        rows.append((label(schedule, naive), run["loss"][0],
                     run["loss"][-1], run["grad_norm"][-1], loss_diff,
                     norm_diff, bitwise))
        if (schedule, naive) == (SCHEDULES[0], False):
            continue
        if not naive and max(loss_diff, norm_diff) > args.tolerance:
            failures.append(f"{label(schedule, naive)}: the loss or gradient "
                            "norm differs from the full batch's by "
                            f"{max(loss_diff, norm_diff):.3g} (relative)")
        if not naive and schedule[0] == 1 and not bitwise:
            failures.append(f"{label(schedule, naive)}: not bitwise the full "
                            "batch's curve")
        if naive and min(loss_diff, norm_diff) <= args.tolerance:
            failures.append(f"{label(schedule, naive)}: within tolerance of "
                            "the full batch: the comparison cannot fail")

    header = ("| schedule (ranks x micro-batches x rows) | first loss | "
              "final loss | final grad_norm | max rel. loss diff | "
              "max rel. grad_norm diff | bitwise |")
    lines = [header, "|---|---|---|---|---|---|---|"]
    for name, first, last, norm, ld, nd, bitwise in rows:
        lines.append(f"| {name} | {first:.6f} | {last:.6f} | {norm:.4f} | "
                     f"{ld:.2e} | {nd:.2e} | {'yes' if bitwise else 'no'} |")
    table = "\n".join(lines)
    tokens = sum(base["tokens"])
    print(f"\n{args.steps} steps of {os.path.basename(args.model)} on "
          f"{data} ({tokens} valid tokens), lr {args.lr}, warmup "
          f"{args.warmup}, seed {args.seed}; differences against 1x1x16 "
          "exact:\n")
    print(table)
    if args.table:
        with open(args.table, "w") as f:
            f.write(table + "\n")
    with open(os.path.join(args.out, "summary.json"), "w") as f:
        json.dump({label(s, n): run for (s, n), run in runs.items()}, f)

    if args.plot:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
        fig, axes = plt.subplots(1, 3, figsize=(16, 4.6))
        steps = range(1, args.steps + 1)
        floor = 1e-9
        for (schedule, naive), run in runs.items():
            style = "--" if naive else "-"
            width = 1.0 if naive else 2.0
            name = label(schedule, naive)
            axes[0].plot(steps, run["loss"], style, linewidth=width,
                         label=name)
            for axis, key in zip(axes[1:], ["loss", "grad_norm"]):
                diff = [max(abs(a - b) / abs(b), floor)
                        for a, b in zip(run[key], base[key])]
                axis.plot(steps, diff, style, linewidth=width, label=name)
        axes[0].set_title("loss (the curves overlap at this scale)")
        axes[1].set_title("|loss - full batch's| / loss")
        axes[2].set_title("|grad_norm - full batch's| / grad_norm")
        for axis in axes:
            axis.set_xlabel("step")
            axis.grid(alpha=0.3)
            axis.set_yscale("log")
        for axis in axes[1:]:
            axis.axhline(args.tolerance, color="black", linewidth=0.8)
            axis.text(1, args.tolerance * 1.5, f"{args.tolerance:g}",
                      fontsize=8)
            axis.text(1, floor * 1.5, "bitwise (0), drawn at 1e-9",
                      fontsize=8)
        axes[0].legend(fontsize=8)
        fig.suptitle("tiny GPT on Debian's fortunes, global batch 16 as "
                     "ranks x micro-batches x rows: exact (solid) vs naive "
                     "(dashed)")
        fig.tight_layout()
        fig.savefig(args.plot, dpi=110)
        print(f"\nreproduce.py: wrote {args.plot}")

    if args.check:
        for failure in failures:
            print(f"reproduce.py: FAIL: {failure}")
        if failures:
            sys.exit(1)
        print(f"reproduce.py: PASS: every exact curve within "
              f"{args.tolerance:g} of the full batch's (bitwise without "
              f"ranks), every naive curve outside it")


if __name__ == "__main__":
    sys.exit(main())
