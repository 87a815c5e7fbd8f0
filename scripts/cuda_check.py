#!/usr/bin/python3
"""Check ga-opt's CUDA step libraries on a GPU against the CPU pipeline.

Runs on the GPU machine, from the kit that scripts/cuda_kit.py built (needs
Python 3 and NumPy only). For every step of the kit's manifest: ga-exec runs
the CUDA library on the kit's inputs; every result must match the CPU
pipeline's result within

    max|gpu - cpu| <= RTOL * max|cpu| + ATOL     (per result tensor)

with RTOL = 1e-4 (or the kit's rtol for a step, e.g. gpu-bf16's against
its emulation) and ATOL = 1e-6: float32 sums in another association
order and the GPU's own exp/log/erf (libdevice) differ from the CPU's by a
few ulps per operation, far below the naive split's error, which the check
also shows (the naive k = 4 run against the exact full batch). Counts
(int64 results) must be equal. A step the kit marks with expect_error
(inputs that break one of its asserts) must exit with status 1, print the
assert's message and write no result. The step time (ga-exec --repeat, inputs
copied to the device and results back included) is reported. Exit status
1 if any check fails; a table goes to OUT/cuda_check.md.
"""

import argparse
import json
import os
import re
import subprocess
import sys

import numpy as np

RTOL = 1e-4
ATOL = 1e-6


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--kit", default=os.path.dirname(
        os.path.abspath(__file__)))
    parser.add_argument("--out", default=".")
    parser.add_argument("--results", default=None,
                        help="where the device's results go (default: "
                        "OUT/results)")
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    kit = args.kit
    with open(os.path.join(kit, "manifest.json")) as f:
        manifest = json.load(f)
    env = dict(os.environ)
    env["LD_LIBRARY_PATH"] = os.path.join(kit, "lib") + (
        ":" + env["LD_LIBRARY_PATH"] if env.get("LD_LIBRARY_PATH") else "")
    ga_exec = os.path.join(kit, "bin", "ga-exec")
    os.makedirs(args.out, exist_ok=True)
    failures = checks = 0
    rows = []
    device = "?"
    full = {}
    for e in manifest["entries"]:
        out_dir = os.path.join(args.results or os.path.join(args.out,
                                                             "results"),
                               e["name"])
        cmd = [ga_exec, os.path.join(kit, e["library"]),
               *[os.path.join(kit, a) for a in e["inputs"]],
               "--out-dir", out_dir, "--repeat", str(args.repeat)]
        done = subprocess.run(cmd, capture_output=True, text=True, env=env)
        checks += 1
        if "expect_error" in e:
            # A step whose inputs break one of its asserts: exit status 1,
            # the assert's message, no results.
            missing = [f for f in e["expect_error"] if f not in done.stderr]
            ok = (done.returncode == 1 and not missing
                  and not os.path.exists(out_dir))
            failures += not ok
            print(f"{'ok  ' if ok else 'FAIL'} {e['name']}: exit "
                  f"{done.returncode}, "
                  + (f"message lacks {missing}" if missing else
                     "the assert's message") + f": {done.stderr.strip()}",
                  flush=True)
            rows.append((e["name"], f"exit {done.returncode}",
                         "exit 1", "", "", "", ""))
            continue
        if done.returncode != 0:
            failures += 1
            print(f"FAIL {e['name']}: ga-exec exited with "
                  f"{done.returncode}:\n{done.stdout}{done.stderr}")
            rows.append((e["name"], "ga-exec failed", "", "", "", "", ""))
            continue
        text = done.stdout
        m = re.search(r"^device: (.*) \(CUDA\)", text, re.M)
        device = m.group(1) if m else device
        run_ms = re.search(r"^run_ms: (\S+) \(mean of \d+, min (\S+)\)",
                           text, re.M)
        peak = re.search(r"^step_peak_bytes: (\d+)", text, re.M).group(1)
        loss = re.search(r"^loss: (\S+)", text, re.M).group(1)
        ref_dir = os.path.join(kit, e["reference"])
        worst = 0.0
        ok = True
        rtol = e.get("rtol", RTOL)
        i = 0
        while os.path.exists(os.path.join(ref_dir, f"result{i}.npy")):
            ref = np.load(os.path.join(ref_dir, f"result{i}.npy"))
            got = np.load(os.path.join(out_dir, f"result{i}.npy"))
            if got.shape != ref.shape or got.dtype != ref.dtype:
                ok = False
                print(f"FAIL {e['name']}: result #{i} is {got.dtype}"
                      f"{list(got.shape)}, expected {ref.dtype}"
                      f"{list(ref.shape)}")
            elif ref.dtype.kind in "iu":
                if not np.array_equal(got, ref):
                    ok = False
                    print(f"FAIL {e['name']}: result #{i} (integer) differs")
            else:
                diff = float(np.max(np.abs(got.astype(np.float64) -
                                           ref.astype(np.float64))))
                scale = float(np.max(np.abs(ref.astype(np.float64))))
                rel = diff / scale if scale else diff
                worst = max(worst, rel)
                if not (diff <= rtol * scale + ATOL):
                    ok = False
                    print(f"FAIL {e['name']}: result #{i}: max|gpu-cpu| = "
                          f"{diff:.3e} > {rtol:.3g} * {scale:.3e} + {ATOL}")
            i += 1
        if i == 0:
            ok = False
            print(f"FAIL {e['name']}: no reference results")
        failures += not ok
        # Against the exact full batch of the same example (the split's
        # error: within tolerance when exact, visible when naive).
        loss_vs_full = ""
        if e["microbatches"] == 1 and not e["naive"]:
            full[e["example"]] = out_dir
        elif e["example"] in full:
            a = np.load(os.path.join(out_dir, "result0.npy"))
            b = np.load(os.path.join(full[e["example"]], "result0.npy"))
            loss_vs_full = f"{abs(float(a) - float(b)) / abs(float(b)):.1e}"
        print(f"{'ok  ' if ok else 'FAIL'} {e['name']}: loss {loss} (cpu "
              f"{e['cpu_loss']}), worst relative difference {worst:.1e}, "
              f"{e['kernels']} kernels, step {run_ms.group(2)} ms",
              flush=True)
        rows.append((e["name"], loss, e["cpu_loss"], f"{worst:.1e}",
                     loss_vs_full, run_ms.group(2), peak))
    with open(os.path.join(args.out, "cuda_check.md"), "w") as f:
        f.write(f"Device: {device}. Command: python3 "
                f"build/device/cuda_check.py --kit build/device "
                f"--repeat {args.repeat}\n\n")
        f.write("| step | GPU loss | CPU loss | worst rel. diff vs CPU | "
                "loss rel. diff vs GPU full batch | step ms (min) | "
                "device peak bytes |\n|---|---|---|---|---|---|---|\n")
        for r in rows:
            f.write("| " + " | ".join(str(c) for c in r) + " |\n")
    print(f"cuda_check: {checks - failures} of {checks} steps passed on "
          f"{device}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
