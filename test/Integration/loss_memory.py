"""The loss's memory, measured: with ga-slice-matmul-rows (the default) the
LM head computes only the logits the next-token loss reads, the logits are a
whole tensor, and the cross-entropy's gradient is computed in their place.
The differentiated step then holds one [N, V] tensor fewer at its peak.

A GPT with a vocabulary large enough that the logits dominate (B 4, S 16,
V 4096, D 16, one block) is compiled by `ga-opt --ga-pipeline` with
slice-matmul-rows=true and =false and run by `ga-run --report-memory`, which
counts every buffer the step allocates. Checked:
  * the measured peak is lower with the option, and the memory model's peak
    (`--test-train-memory-model`) equals the measured one in both;
  * at the model's peak, one buffer of at least N*V*4 bytes (an f32 [N, V]
    tensor, N = B*(S-1)) is alive with the option (the logits, overwritten
    by their gradient) and two without (the logits and their gradient);
  * both compute the same step: loss and every gradient within a relative
    1e-5 (the head's weight gradient sums the tokens in another grouping
    once the unread rows are gone; each row of logits is the same dot
    products).
With loss-chunk-rows=15 (ga-chunk-loss-head: the head, the loss and the
products that read the logits' gradient over 4 chunks of 15 of the N = 60
rows), also checked:
  * the measured peak is lower than with slice-matmul-rows alone, equal to
    the memory model's, and no buffer of N*V*4 bytes is alive at the peak
    (the largest logits buffer is a chunk's);
  * every gradient has the bits of the unchunked step's (each row is the
    same computation, and the reductions over the rows continue their init
    in row order), and the loss is within a relative 1e-6 of it (the sum of
    the chunks' sums).
"""

import os
import re
import subprocess
import sys

import numpy as np

from ga_scripts.reference_harness import parse_test_args, tool_test_parser

B, S, V, D, H, F, L = 4, 16, 4096, 16, 2, 64, 1


def inputs(rng):
    shapes = [[V, D], [S, D], [L, D], [L, D], [L, D, 3 * D], [L, D, D],
              [L, D], [L, D], [L, D, F], [L, F], [L, F, D], [L, D], [D], [D],
              [D, V]]
    params = [(rng.standard_normal(s) * 0.3).astype(np.float32)
              for s in shapes]
    for i in (2, 6, 12):
        params[i] = params[i] + 1.0
    tokens = rng.integers(0, V, (B, S)).astype(np.int64)
    labels = rng.integers(0, V, (B, S)).astype(np.int64)
    labels[:, S - 3:] = -100
    return params + [tokens, labels]


def main():
    parser = tool_test_parser("ga-opt", "ga-run")
    args = parse_test_args(parser)
    model_path = os.path.join(args.workdir, "gpt.mlir")
    with open(model_path, "w") as f:
        subprocess.run(
            [sys.executable, os.path.join(args.src, "examples/gen_tiny_gpt.py"),
             "--batch", str(B), "--seq", str(S), "--vocab", str(V), "--dim",
             str(D), "--heads", str(H), "--ffn", str(F), "--layers", str(L)],
            stdout=f, check=True)
    paths = []
    for i, array in enumerate(inputs(np.random.default_rng(3))):
        paths.append(os.path.join(args.workdir, f"arg{i}.npy"))
        np.save(paths[-1], array)
    runs = {}
    pipelines = {"true": "slice-matmul-rows=true",
                 "false": "slice-matmul-rows=false",
                 "chunked": "loss-chunk-rows=15"}
    for option, pipeline in pipelines.items():
        lowered = os.path.join(args.workdir, f"lowered_{option}.mlir")
        subprocess.run([args.ga_opt, model_path,
                        f"--ga-pipeline={pipeline}",
                        "-o", lowered], check=True)
        out_dir = os.path.join(args.workdir, f"out_{option}")
        os.makedirs(out_dir, exist_ok=True)
        text = subprocess.run(
            [args.ga_run, lowered, *paths, "--report-memory", "--out-dir",
             out_dir], capture_output=True, text=True, check=True).stdout
        peak = int(re.search(r"^step_peak_bytes: (\d+)", text, re.M).group(1))
        results = [np.load(os.path.join(out_dir, name))
                   for name in sorted(os.listdir(out_dir))]
        model = subprocess.run(
            [args.ga_opt, model_path, "--test-train-memory-model="
             f"pipeline-options='{pipeline}'",
             "--mlir-print-op-on-diagnostic=false", "-o", os.devnull],
            capture_output=True, text=True, check=True).stderr
        model_peak = int(re.search(r"memory model: peak (\d+) bytes",
                                   model).group(1))
        alive = [int(b) for b in re.findall(
            r"alive at the peak: (\d+) bytes in 1 buffer", model)]
        runs[option] = (peak, results, model_peak, alive)
        print(f"{pipeline}: step_peak_bytes {peak}, model "
              f"{model_peak}, largest alive at the peak {sorted(alive)[-3:]}")
    failures, checks = [], 0
    saved = runs["false"][0] - runs["true"][0]
    logits_bytes = B * (S - 1) * V * 4
    checks += 1
    if saved <= 0:
        failures.append(f"peak not lowered: {runs['true'][0]} bytes with the "
                        f"option, {runs['false'][0]} without")
    for option, expected in (("true", 1), ("false", 2), ("chunked", 0)):
        peak, _, model_peak, alive = runs[option]
        checks += 2
        if model_peak != peak:
            failures.append(f"slice-matmul-rows={option}: model peak "
                            f"{model_peak} != measured {peak}")
        large = sum(1 for b in alive if b >= logits_bytes)
        if large != expected:
            failures.append(f"slice-matmul-rows={option}: {large} buffers of "
                            f">= {logits_bytes} bytes alive at the peak, "
                            f"expected {expected}")
    ours, theirs = runs["true"][1], runs["false"][1]
    checks += 1
    if len(ours) != len(theirs) or len(ours) < 16:
        failures.append(f"{len(ours)} vs {len(theirs)} results")
    for i, (a, b) in enumerate(zip(ours, theirs)):
        checks += 1
        err = float(np.linalg.norm(a.astype(np.float64) - b) /
                    max(np.linalg.norm(b.astype(np.float64)), 1e-30))
        if a.shape != b.shape or not err <= 1e-5:
            failures.append(f"result {i}: relative difference {err}")
    chunked, whole = runs["chunked"][1], runs["true"][1]
    checks += 1
    if runs["chunked"][0] >= runs["true"][0]:
        failures.append(f"chunks: peak {runs['chunked'][0]} not below "
                        f"{runs['true'][0]}")
    print(f"loss-chunk-rows=15: peak lowered by "
          f"{runs['true'][0] - runs['chunked'][0]} bytes below "
          f"slice-matmul-rows alone")
    checks += 1
    if len(chunked) != len(whole):
        failures.append(f"chunks: {len(chunked)} vs {len(whole)} results")
    # The results are written as result<i>.npy: the loss is result0.
    for i, (a, b) in enumerate(zip(chunked, whole)):
        checks += 1
        if i == 0:
            err = float(abs(float(a) - float(b)) / max(abs(float(b)), 1e-30))
            print(f"loss-chunk-rows=15: loss relative difference {err:.2e}")
            if not err <= 1e-6:
                failures.append(f"chunks: loss relative difference {err}")
        elif a.dtype != b.dtype or a.tobytes() != b.tobytes():
            err = float(np.linalg.norm(a.astype(np.float64) - b) /
                        max(np.linalg.norm(b.astype(np.float64)), 1e-30))
            failures.append(f"chunks: result {i} differs in its bits "
                            f"(relative {err:.2e})")
    for failure in failures:
        print("FAIL", failure)
    print(f"loss memory: {checks - len(failures)} of {checks} checks passed "
          f"(peak lowered by {saved} bytes, one [N, V] tensor is "
          f"{logits_bytes})")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
