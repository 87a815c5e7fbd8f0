"""The tiny GPT with attention=library: its two attentions raised to
train.attention and each computed by one call of the runtime's fused
attention, forward and backward (the CPU runtime's reference on the CPU;
on target=cuda the device program's calls, which gpu-emulate runs with
the same reference).

- float32 on the CPU at k = 1, 2, 4 micro-batches: every split's results
  bitwise the full batch's, and within a relative 1e-5 of the unfused
  step's (the row statistics are summed in another order), from which
  they differ;
- precision=bf16-mixed (the call reads bfloat16 copies of the queries,
  keys and values and writes bfloat16 results, as cuDNN's fused attention
  does) at k = 1 and 4: splits bitwise; the emulated CUDA device program
  bitwise the CPU's (gpu-split-reductions=false, scalar CPU code: the same
  order of every other sum); within 5e-2 of the float32 unfused step and
  different from it (the roundings are in effect), and within 5e-2 of
  bf16-mixed with the attention over tiles (the same products, rounded
  at other places);
- precision=bf16 (bf16-mixed, the per-example products' results stored as
  bfloat16 too; the attention's call reads the bfloat16 projection as it
  is) at k = 1 and 4: the same checks.

The gradients against finite differences of a float64 NumPy model are
tiny_gpt_reference.py's (attention-library.test runs it with
--attention=library).
"""

import os

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
    example = os.path.join(args.src, "examples", "tiny_gpt.mlir")
    with open(example) as f:
        source = f.read()
    check = Checker("attention library")
    unfused = run_ga_run(args.ga_run, example, inputs,
                         os.path.join(args.workdir, "unfused"),
                         extra=SCALAR)[0]
    tiles_bf16 = run_ga_run(args.ga_run, example, inputs,
                            os.path.join(args.workdir, "tiles_bf16"),
                            extra=SCALAR + ["--attention=tiles",
                                            "--precision=bf16-mixed"])[0]
    for precision, ks in (("f32", (1, 2, 4)), ("bf16-mixed", (1, 4)),
                          ("bf16", (1, 4))):
        full = None
        for k in ks:
            tag = f"{precision}, k={k}"
            work = os.path.join(args.workdir, f"{precision}_k{k}")
            os.makedirs(work, exist_ok=True)
            path = os.path.join(work, "step.mlir")
            with open(path, "w") as f:
                f.write(with_schedule(source, "tiny_gpt", microbatches=k))
            got = run_ga_run(args.ga_run, path, inputs,
                             os.path.join(work, "cpu"),
                             extra=SCALAR + ["--attention=library",
                                             f"--precision={precision}"])[0]
            floats = [i for i, b in enumerate(unfused)
                      if b.dtype == np.float32]
            if full is None:
                full = got
                bound = 1e-5 if precision == "f32" else 5e-2
                for i in floats:
                    check.relative(f"{tag}: result #{i} vs unfused float32",
                                   got[i], unfused[i], bound)
                    if precision != "f32":
                        check.relative(f"{tag}: result #{i} vs bf16-mixed "
                                       "over tiles", got[i], tiles_bf16[i],
                                       5e-2)
                check.differs(f"{tag}: the results vs unfused float32",
                              np.concatenate([got[i].ravel()
                                              for i in floats]),
                              np.concatenate([unfused[i].ravel()
                                              for i in floats]),
                              0.0 if precision == "f32" else 1e-4)
            else:
                for i, (a, b) in enumerate(zip(got, full)):
                    check.equal(f"{tag}: result #{i} vs k=1", a, b)
            if precision != "f32":
                emu = emulate(args, path, os.path.join(work, "emu"),
                              f"precision={precision} attention=library "
                              "gpu-split-reductions=false gpu-vector-width=2",
                              inputs)
                for i, (a, b) in enumerate(zip(emu, got)):
                    check.equal(f"{tag}: emulated CUDA result #{i} vs CPU",
                                a, b)
    check.finish()


if __name__ == "__main__":
    main()
