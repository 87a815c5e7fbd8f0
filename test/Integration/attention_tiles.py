"""The tiny GPT's attention as train.attention over query and key tiles
(--ga-pipeline attention-key-tile=N): what must not change, and what does.

- Micro-batch splits stay exact: at k = 2 and 4 every result has the bits
  of the full batch at k = 1, with the same tiles (attention mixes positions
  within a sequence, never sequences).
- The CUDA target's device program, run on the CPU (gpu-emulate=true,
  reductions not split), has the bits of the CPU pipeline with scalar code,
  at k = 1 and 4.
- Against the unfused step (attention as written, no tiles), the online
  softmax rescales at each tile: every float result within a relative norm
  error of 1e-5 (measured: at most 4.7e-7 for tiles of 4), and not bitwise
  equal (the tiles are in effect); tiles of 16 (one tile of all keys) too.
- Vectorized (the default), the tiles give the same bits on 1 and 2
  threads, within 1e-5 of the scalar code (fused multiply-adds).

- The memory: the step's measured peak (ga-run --report-memory, CPU) is
  below the unfused step's by one [B, H, S, S] tensor at least (the
  probabilities the unfused step keeps per layer), and the memory model
  predicts it to the byte.

The gradients through the tiles against finite differences of a float64
NumPy model are tiny_gpt_reference.py's (attention-tiles.test runs it with
--attention-key-tile=4).
"""

import os
import re

import numpy as np

from cuda_emulate import emulate
from ga_scripts.reference_harness import (Checker, padded_example_inputs,
                                          parse_test_args, run_ga_run,
                                          tool_test_parser, with_schedule)

SCALAR = ["--vectorize=false", "--parallel=false"]


def main():
    parser = tool_test_parser("ga-opt", "ga-run")
    args = parse_test_args(parser)
    inputs = padded_example_inputs(np.random.default_rng(5))["tiny_gpt"]
    with open(os.path.join(args.src, "examples", "tiny_gpt.mlir")) as f:
        source = f.read()
    check = Checker("attention tiles")
    unfused = run_ga_run(args.ga_run,
                         os.path.join(args.src, "examples", "tiny_gpt.mlir"),
                         inputs, os.path.join(args.workdir, "unfused"),
                         extra=SCALAR)[0]
    for tile in (4, 16):
        full = None
        for k in (1, 2, 4):
            tag = f"tiles of {tile}, k={k}"
            work = os.path.join(args.workdir, f"t{tile}_k{k}")
            os.makedirs(work, exist_ok=True)
            path = os.path.join(work, "step.mlir")
            with open(path, "w") as f:
                f.write(with_schedule(source, "tiny_gpt", microbatches=k))
            got = run_ga_run(args.ga_run, path, inputs,
                             os.path.join(work, "cpu"),
                             extra=SCALAR + [f"--attention-key-tile={tile}"])[0]
            if full is None:
                full = got
                for i, (a, b) in enumerate(zip(got, unfused)):
                    if b.dtype == np.float32:
                        check.relative(f"{tag}: result #{i} vs unfused", a,
                                       b, 1e-5)
                    else:
                        check.equal(f"{tag}: result #{i} vs unfused", a, b)
                floats = [(a, b) for a, b in zip(got, unfused)
                          if b.dtype == np.float32]
                check.differs(f"{tag}: the results vs unfused",
                              np.concatenate([a.ravel() for a, _ in floats]),
                              np.concatenate([b.ravel() for _, b in floats]),
                              0.0)
            else:
                for i, (a, b) in enumerate(zip(got, full)):
                    check.equal(f"{tag}: result #{i} vs k=1", a, b)
            if tile == 4 and k in (1, 4):
                emu = emulate(args, path, os.path.join(work, "emu"),
                              f"attention-key-tile={tile} "
                              "gpu-split-reductions=false gpu-vector-width=2",
                              inputs)
                for i, (a, b) in enumerate(zip(emu, got)):
                    check.equal(f"{tag}: emulated CUDA result #{i} vs CPU",
                                a, b)
            if tile == 4 and k == 1:
                # Vectorized (the tiles' generics, masks as float tiles):
                # on 1 and 2 threads the same bits, within 1e-5 of scalar.
                threads = [run_ga_run(args.ga_run, path, inputs,
                                      os.path.join(work, f"vec{n}"),
                                      extra=[f"--num-threads={n}",
                                             f"--attention-key-tile={tile}"]
                                      )[0] for n in (1, 2)]
                for i, (a, b, c) in enumerate(zip(*threads, got)):
                    check.equal(f"{tag}: vectorized result #{i}, 2 threads "
                                "vs 1", b, a)
                    if c.dtype == np.float32:
                        check.relative(f"{tag}: vectorized result #{i} vs "
                                       "scalar", a, c, 1e-5)
                    else:
                        check.equal(f"{tag}: vectorized result #{i} vs "
                                    "scalar", a, c)
    peaks = {}
    for tile in (0, 4):
        _, out = run_ga_run(args.ga_run,
                            os.path.join(args.src, "examples", "tiny_gpt.mlir"),
                            inputs, os.path.join(args.workdir, f"mem{tile}"),
                            extra=["--report-memory",
                                   f"--attention-key-tile={tile}"])
        measured = int(re.search(r"^budget_peak_bytes: (\d+)", out, re.M).group(1))
        model = int(re.search(r"^model_peak_bytes: (\d+)", out,
                              re.M).group(1))
        check.close(f"tiles of {tile}: the model's peak vs the measured",
                    model, measured, rtol=0)
        peaks[tile] = measured
    # The unfused step keeps each layer's probabilities, [B, H, S, S] =
    # [8, 2, 16, 16] floats, for the backward pass; the tiles keep none, so
    # their peak is lower by one such tensor at least.
    scores = 8 * 2 * 16 * 16 * 4
    lower = peaks[4] <= peaks[0] - scores
    check.checks += 1
    check.failures += 0 if lower else 1
    print(f"{'ok  ' if lower else 'FAIL'} attention tiles: peak bytes with "
          f"tiles of 4 {peaks[4]}, unfused {peaks[0]}: must be lower by "
          f"one [B, H, S, S] tensor ({scores} B) at least")
    check.finish()


if __name__ == "__main__":
    main()
