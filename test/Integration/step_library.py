"""A step compiled ahead of time runs bit for bit as ga-run runs it.

For examples/mlp and examples/tiny_gpt, with random padded inputs, at
microbatches = 1 and 4: `ga-compile` builds a step library, `ga-exec` runs
it, and the Python binding (python/ga_step) calls it. Every result of both
must have exactly the bits of `ga-run` on the same file, and the printed
loss and gradient norm the same text. The split library (k = 4) must also
equal the full batch (k = 1) bitwise, as split-exactness.test checks for
ga-run. With --torch, the binding is also called with torch tensors
(through DLPack) and with preallocated out= arrays.
"""

import os
import re

import numpy as np

import ga_step
from ga_scripts.reference_harness import (Checker, padded_example_inputs,
                                          parse_test_args, printed, run_command
                                          as run, run_ga_run, tool_test_parser,
                                          with_schedule)


def main():
    parser = tool_test_parser("ga-run", "ga-compile", "ga-exec")
    parser.add_argument("--torch", action="store_true")
    args = parse_test_args(parser)

    rng = np.random.default_rng(5)
    inputs = padded_example_inputs(rng)
    check = Checker("library")
    torch = None
    if args.torch:
        import torch

    for name in ("mlp", "tiny_gpt"):
        with open(os.path.join(args.src, "examples", name + ".mlir")) as f:
            source = f.read()
        full = None
        for k in (1, 4):
            tag = f"{name} k={k}"
            work = os.path.join(args.workdir, f"{name}_k{k}")
            path = work + ".mlir"
            with open(path, "w") as f:
                f.write(with_schedule(source, name, microbatches=k))
            expected, jit_out = run_ga_run(args.ga_run, path, inputs[name],
                                           work + "_run")
            lib = work + ".so"
            run([args.ga_compile, path, "-o", lib])
            # ga-exec on the .npy files run_ga_run saved.
            npys = [os.path.join(work + "_run", f"arg{i}.npy")
                    for i in range(len(inputs[name]))]
            out_dir = work + "_exec"
            exec_out = run([args.ga_exec, lib, *npys, "--out-dir", out_dir])
            for i, b in enumerate(expected):
                a = np.load(os.path.join(out_dir, f"result{i}.npy"))
                check.equal(f"{tag}: ga-exec result #{i}", a, b)
            for key in ("loss", "grad_norm"):
                same = re.search(rf"^{key}: .*$", exec_out, re.M).group(0) == \
                    re.search(rf"^{key}: .*$", jit_out, re.M).group(0)
                check.checks += 1
                check.failures += not same
                print(f"{'ok  ' if same else 'FAIL'} library: {tag}: "
                      f"ga-exec prints the {key} ga-run prints")
            # The binding.
            step = ga_step.load(lib)
            results = step(*inputs[name])
            for i, (a, b) in enumerate(zip(results, expected)):
                check.equal(f"{tag}: binding result #{i}", a, b)
            # ga-run prints 9 significant digits: up to 5e-9 relative.
            loss, norm = step.summary(results)
            check.close(f"{tag}: binding loss", loss,
                        printed(jit_out, "loss"), rtol=1e-8)
            check.close(f"{tag}: binding gradient norm", norm,
                        printed(jit_out, "grad_norm"), rtol=1e-8)
            # Reused output buffers, twice: the same bits.
            out = [np.full(r.shape, 7, r.dtype) for r in expected]
            for attempt in (1, 2):
                step(*inputs[name], out=out)
                same = all(a.tobytes() == b.tobytes()
                           for a, b in zip(out, expected))
                check.checks += 1
                check.failures += not same
                print(f"{'ok  ' if same else 'FAIL'} library: {tag}: out= "
                      f"buffers, call {attempt}: "
                      f"{'bitwise identical' if same else 'DIFFERENT bits'}")
            if torch is not None:
                tensors = [torch.from_numpy(a.copy()) for a in inputs[name]]
                for i, (a, b) in enumerate(zip(step(*tensors), expected)):
                    check.equal(f"{tag}: binding on torch tensors, "
                                f"result #{i}", a, b)
            if k == 1:
                full = expected
            else:
                for i, (a, b) in enumerate(zip(results, full)):
                    check.equal(f"{tag}: library result #{i} against the "
                                "full batch", a, b)
    check.finish()


if __name__ == "__main__":
    main()
