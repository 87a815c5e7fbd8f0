"""The CUDA target's device program, run on the CPU, computes what the CPU
pipeline computes, bit for bit (the CPU with attention=tiles, the form the
CUDA target gives the tiny GPT's attention by default).

For examples/mlp and examples/tiny_gpt at microbatches = 1 and 4 (and the
naive split at 4): `ga-opt --ga-pipeline="target=cuda gpu-emulate=true"`
keeps everything the CUDA pipeline does to the step (kernels for every
operation, their tiling over blocks and threads, the host code moved to
single-thread kernels, the scalars read through the runtime) but runs each
launch as a loop nest over its blocks and threads on the CPU; ga-run runs
it. With gpu-split-reductions=false, every result must have exactly the
bits of the CPU pipeline with scalar code (vectorize=false: the same order
of every sum), which checks the mapping, the memory placement, the
host-code moves, the GEMMs with a bias epilogue (gpu-bias-epilogue, on
by default) and the elementwise kernels on vectors (gpu-vector-width=2
here, so that the examples' rows of 64 qualify) without a GPU. At k = 4, the same
step without the CUDA target's fusion (gpu-fusion=false: no producer
fused into a reduction, every loop nest its own kernel) must give the
fused step's bits, with and without two-stage
reductions. With the default two-stage reductions
(ga-gpu-split-reductions, another summation order; here down to reductions
of 16 elements and rows in 8 lanes, so that the examples' are split), every
result must match the CPU's within a relative norm error of 1e-5 (exact
splits only).

With gpu-bf16=true, cuBLAS reads the matrices of every product as
bfloat16; the emulation rounds them the same way. Checked for the MLP
against a float64 NumPy reference (mlp_reference.py) whose products take
bfloat16-rounded operands: relative error at most 1e-4 (float32 sums; the
reference rounds from float64 values, which moves a few roundings), while
the same reference without the rounding must differ by more than 1e-4 (the
rounding is in effect) and by at most 5e-2 (what 8-bit mantissas cost
here: 2e-4 for the loss, up to 1.8e-2 for a gradient). The tiny GPT's
results must stay within 5e-2 of the float32 CPU pipeline's and differ
from them.

With precision=bf16-mixed (ga-mixed-precision: the products read bfloat16
copies of their operands), every product must become a call of the
runtime's GEMMs of bfloat16 operands (`_bf16in`), and the results must have
the bits of the CPU pipeline's scalar code in the same precision. The same
with precision=bf16 (the per-example products' results rounded to
bfloat16 too: some GEMMs must write bfloat16); the tiny GPT's with its rows
split in lanes (the loss's statistics of the bfloat16 logits in one pass)
within 2^-8 of the CPU's (tensor norms: another order of sums, so a value
rounded downstream may take its bfloat16 neighbour).

With loss-chunk-rows=40 (the tiny GPT's head and loss over 3 chunks of
its 120 rows, ga-chunk-loss-head), the device program's gradients must
have the CPU's bits and its loss be within a relative 1e-6.

With host-offload=true (ga-gpu-offload-buffers, here asked to fit 1 byte
with no least size: every buffer it can follow whose copies hide goes to
host memory between two of its accesses and comes back), for the tiny GPT
at k = 1 and 4:
the program must call the runtime's offload, and every result must have
the CPU's bits; the emulation's offload overwrites the device buffer with
NaNs once copied, so a read of it before the copy back would show.

With --mpirun, data-parallel schedules too (r = 2 ranks x k = 1, 2): the
collectives, which the CUDA target stages through host memory, run under
mpirun, and rank 0's results must be the CPU pipeline's under mpirun, bit
for bit.
"""

import os
import re
import subprocess
import sys

import numpy as np

from mlp_reference import reference as mlp_reference
from ga_scripts.reference_harness import (Checker, mpi_launcher,
                                          padded_example_inputs,
                                          parse_test_args, run_ga_run,
                                          tool_test_parser, with_schedule)


def bf16(a):
    """`a` in float32, rounded to the nearest bfloat16 (ties to even)."""
    bits = np.asarray(a, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32).astype(np.float64)


def emulate(args, path, out, options, inputs, launcher=()):
    """The results of the step in `path` compiled with target=cuda
    gpu-emulate=true and `options` (into `out`.mlir), run by ga-run in
    `out` (under `launcher`)."""
    emulated = out + ".mlir"
    done = subprocess.run(
        [args.ga_opt, path,
         f"--ga-pipeline=target=cuda gpu-emulate=true {options}",
         "-o", emulated], capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"FAIL: {path} {options}: ga-opt failed:\n{done.stderr}")
    got, _ = run_ga_run(args.ga_run, emulated, inputs, out, launcher=launcher)
    return got


def check_chunks(args, check, name, path, work, inputs, expected):
    """The tiny GPT with loss-chunk-rows=40 (see the module's comment)."""
    got = emulate(args, path, os.path.join(work, "chunks"),
                  "gpu-split-reductions=false loss-chunk-rows=40", inputs)
    check.relative(f"{name} chunks: loss", got[0], expected[0], 1e-6)
    for i, (a, b) in enumerate(zip(got[1:], expected[1:]), 1):
        check.equal(f"{name} chunks: result #{i}", a, b)


def check_bf16(args, check, name, path, work, inputs, expected):
    """The step in `path` compiled with gpu-bf16=true, emulated (see the
    module's comment); `expected` is the float32 CPU pipeline's results."""
    got = emulate(args, path, os.path.join(work, "bf16"),
                  "gpu-split-reductions=false gpu-bf16=true", inputs)
    if name == "mlp":
        exact = [a.astype(np.float64) if a.dtype == np.float32 else a
                 for a in inputs]
        rounded = mlp_reference(*exact, operand=bf16)
        plain = mlp_reference(*exact)
        for i, what in enumerate(["loss", "d/dw1", "d/db1", "d/dw2"]):
            check.relative(f"mlp bf16: {what} vs the bf16 reference", got[i],
                           rounded[i], 1e-4)
            check.relative(f"mlp bf16: {what} vs the float64 reference",
                           got[i], plain[i], 5e-2)
            check.differs(f"mlp bf16: {what} vs the float64 reference",
                          got[i], plain[i], 1e-4)
        return
    for i, (a, b) in enumerate(zip(got, expected)):
        if b.dtype != np.float32:
            check.equal(f"{name} bf16: result #{i}", a, b)
            continue
        check.relative(f"{name} bf16: result #{i} vs float32", a, b, 5e-2)
    grads = [(a, b) for a, b in zip(got[1:], expected[1:])
             if b.dtype == np.float32]
    check.differs(f"{name} bf16: the gradients vs float32",
                  np.concatenate([a.ravel() for a, _ in grads]),
                  np.concatenate([b.ravel() for _, b in grads]), 1e-4)


def check_bf16_mixed(args, check, name, path, work, inputs,
                     precision="bf16-mixed"):
    """precision=bf16-mixed (or bf16), emulated against the CPU pipeline's
    scalar code in the same precision: every product goes to the runtime's
    GEMMs of bfloat16 operands (_bf16in), and every bit is the CPU's."""
    expected, _ = run_ga_run(
        args.ga_run, path, inputs, os.path.join(work, "cpu_" + precision),
        extra=["--vectorize=false", "--parallel=false",
               "--precision=" + precision, "--attention=tiles"])
    out = os.path.join(work, precision)
    got = emulate(args, path, out, "gpu-split-reductions=false "
                  "gpu-vector-width=2 precision=" + precision, inputs)
    with open(out + ".mlir") as f:
        program = f.read()
    gemms = re.findall(r"call @(ga_host_gemm\w*)\(", program)
    check.true(f"{name} {precision}: {len(gemms)} GEMM calls, each of "
               "bfloat16 operands",
               gemms and all("_bf16in" in g for g in gemms),
               " ".join(sorted(set(gemms))) or "no GEMM call")
    if precision == "bf16":
        # The per-example products write bfloat16 (the emulation's
        # ga_host_gemm_bf16_bf16in, and its bias form).
        written = [g for g in gemms if g.startswith("ga_host_gemm_bf16")
                   or g.startswith("ga_host_gemm_bias_bf16")]
        check.true(f"{name} bf16: {len(written)} GEMM calls write bfloat16",
                   len(written) > 0, " ".join(sorted(set(gemms))))
    for i, (a, b) in enumerate(zip(got, expected)):
        check.equal(f"{name} {precision}: result #{i}", a, b)
    if precision == "bf16" and name == "tiny_gpt":
        # With the rows split in lanes (the loss's statistics of the
        # bfloat16 logits in one pass of online pairs; the layer norms'
        # too): sums in another order, so a value rounded to bfloat16
        # downstream may round to its neighbour, and every result may move
        # by the roundings it reads: within 2^-8, two units of bfloat16's
        # rounding (tensor norms; measured 1.2e-3 at most).
        split = emulate(args, path, os.path.join(work, "bf16_split"),
                        "gpu-split-reductions=true gpu-split-min-length=16 "
                        "gpu-reduction-lanes=8 precision=bf16", inputs)
        for i, (a, b) in enumerate(zip(split, expected)):
            if b.dtype == np.float32:
                check.relative(f"{name} bf16, rows in lanes: result #{i}",
                               a, b, 2.0 ** -8)
            else:
                check.equal(f"{name} bf16, rows in lanes: result #{i}", a, b)


def check_offload(args, check, tag, path, work, inputs, expected):
    """host-offload of every buffer the pass can move (see the module's
    comment): the CPU's bits, and offloads in the program."""
    out = os.path.join(work, "offload")
    got = emulate(args, path, out, "gpu-split-reductions=false "
                  "gpu-vector-width=2 host-offload=true offload-budget=1 "
                  "offload-min-bytes=0", inputs)
    with open(out + ".mlir") as f:
        program = f.read()
    offloads = len(re.findall(r"call @ga_host_offload\(", program))
    reloads = len(re.findall(r"call @ga_host_reload_wait\(", program))
    check.true(f"{tag} host-offload: {offloads} buffers offloaded, as many "
               "waited for", offloads > 0 and offloads == reloads,
               f"{offloads} offloads, {reloads} waits")
    for i, (a, b) in enumerate(zip(got, expected)):
        check.equal(f"{tag} host-offload: result #{i}", a, b)


def main():
    parser = tool_test_parser("ga-opt", "ga-run")
    parser.add_argument("--mpirun", default=None,
                        help="the launcher command, without -np: also run "
                             "data-parallel schedules")
    args = parse_test_args(parser)
    inputs = padded_example_inputs(np.random.default_rng(5))
    check = Checker("emulated")
    for name in ("mlp", "tiny_gpt"):
        with open(os.path.join(args.src, "examples", name + ".mlir")) as f:
            source = f.read()
        schedules = [(1, 1, False), (1, 4, False), (1, 4, True)]
        if args.mpirun:
            schedules = [(2, 1, False), (2, 2, False)]
        for r, k, naive in schedules:
            launcher = mpi_launcher(args.mpirun, r) if r > 1 else ()
            tag = f"{name} r={r} k={k}" + (" naive" if naive else "")
            work = os.path.join(args.workdir, tag.replace(" ", "_"))
            os.makedirs(work, exist_ok=True)
            path = os.path.join(work, "step.mlir")
            with open(path, "w") as f:
                f.write(with_schedule(source, name, microbatches=k,
                                      data_parallel=r))
            # The attention over tiles: the CUDA target's default form.
            cpu_flags = ["--vectorize=false", "--parallel=false",
                         "--attention=tiles"]
            if naive:
                cpu_flags.append("--naive")
            expected, _ = run_ga_run(args.ga_run, path, inputs[name],
                                     os.path.join(work, "cpu"),
                                     extra=cpu_flags, launcher=launcher)
            split = [False] if naive or r > 1 else [False, True]
            for split_reductions in split:
                flag = " naive=true" if naive else ""
                # Split even the examples' short reductions (128 tokens,
                # rows of 16 features in 8 lanes).
                flag += (" gpu-split-reductions=true gpu-split-min-length=16"
                         " gpu-reduction-lanes=8"
                         if split_reductions else
                         # Pairs of elements per thread: the examples' rows
                         # of 64 are 32 groups of 2 (4 would be too few).
                         " gpu-split-reductions=false gpu-vector-width=2")
                variant = "split" if split_reductions else "emu"
                got = emulate(args, path, os.path.join(work, variant), flag,
                              inputs[name], launcher)
                for i, (a, b) in enumerate(zip(got, expected)):
                    if split_reductions:
                        check.relative(f"{tag} split: result #{i}", a, b,
                                       1e-5)
                    else:
                        check.equal(f"{tag}: result #{i}", a, b)
                if (r, k, naive) == (1, 4, False):
                    # The CUDA target's fusion (gpu-fusion, on above)
                    # changes no bit.
                    unfused = emulate(
                        args, path, os.path.join(work, variant + "_unfused"),
                        flag + " gpu-fusion=false", inputs[name])
                    for i, (a, b) in enumerate(zip(unfused, got)):
                        check.equal(f"{tag} {variant}: result #{i} without "
                                    "gpu-fusion", a, b)
            if r == 1 and not naive and name == "tiny_gpt":
                check_offload(args, check, tag, path, work, inputs[name],
                              expected)
            if (r, k, naive) == (1, 1, False):
                check_bf16(args, check, name, path, work, inputs[name],
                           expected)
                for precision in ("bf16-mixed", "bf16"):
                    check_bf16_mixed(args, check, name, path, work,
                                     inputs[name], precision)
                if name == "tiny_gpt":
                    check_chunks(args, check, name, path, work, inputs[name],
                                 expected)
    check.finish()


if __name__ == "__main__":
    main()
