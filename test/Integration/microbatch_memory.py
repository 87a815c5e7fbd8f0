"""Micro-batching saves memory, measured: the peak bytes of the buffers a
step allocates (step_peak_bytes, counted by libga_runtime's allocator) fall
strictly as the micro-batch count k grows, for both examples, in ga-run and
in a library run by ga-exec alike (the same code: the same bytes). Every
peak is at least the bytes of the gradients, which the step holds whole."""

import os
import re

import numpy as np

from ga_scripts.reference_harness import (Checker, padded_example_inputs,
                                          parse_test_args, run_command,
                                          save_arrays, tool_test_parser,
                                          with_schedule)


def peak(cmd):
    return int(re.search(r"^step_peak_bytes: (\d+)$", run_command(cmd),
                         re.M).group(1))


def main():
    parser = tool_test_parser("ga-run", "ga-compile", "ga-exec")
    args = parse_test_args(parser)
    inputs = padded_example_inputs(np.random.default_rng(5))
    check = Checker("memory")
    params = {"mlp": 3, "tiny_gpt": 15}
    for name in ("mlp", "tiny_gpt"):
        with open(os.path.join(args.src, "examples", name + ".mlir")) as f:
            source = f.read()
        paths = save_arrays(inputs[name],
                            os.path.join(args.workdir, f"{name}_arg"))
        grad_bytes = sum(a.nbytes for a in inputs[name][:params[name]])
        peaks = []
        for k in (1, 2, 4, 8):
            path = os.path.join(args.workdir, f"{name}_k{k}.mlir")
            with open(path, "w") as f:
                f.write(with_schedule(source, name, microbatches=k))
            jit = peak([args.ga_run, path, *paths])
            lib = path[:-5] + ".so"
            run_command([args.ga_compile, path, "-o", lib])
            aot = peak([args.ga_exec, lib, *paths])
            print(f"     memory: {name} k={k}: step_peak_bytes {jit} "
                  f"(ga-run), {aot} (ga-exec); gradients {grad_bytes}")
            check.close(f"{name} k={k}: ga-exec's peak equals ga-run's", aot,
                        jit, rtol=0)
            check.true(f"{name} k={k}: the peak holds at least the "
                       "gradients", jit >= grad_bytes)
            peaks.append(jit)
        for (k0, p0), (k1, p1) in zip(zip((1, 2, 4), peaks),
                                      zip((2, 4, 8), peaks[1:])):
            check.true(f"{name}: k={k1} peaks at {p1} bytes, below k={k0} "
                       f"({p0}): {p1 / p0:.2f}x", p1 < p0)
    check.finish()


if __name__ == "__main__":
    main()
