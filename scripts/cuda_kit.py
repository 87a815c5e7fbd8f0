#!/usr/bin/python3
"""Build the kit that checks ga-opt's CUDA target on a machine with a GPU.

The GPU machine has a CUDA driver, Python and NumPy but no MLIR: steps are
compiled here and run there. For both examples and every micro-batch split
(k = 1, 2, 4, and the naive split at k = 4), this script

  - writes the example with its schedule and random padded inputs (.npy),
  - compiles the CPU step library and runs it with ga-exec: the reference
    results (the CPU pipeline's),
  - compiles the CUDA step library (ga-compile --target=cuda),

and puts into OUT (default build/device): bin/ga-exec, lib/ (the runtimes,
the step libraries and the shared libraries they need that are not part of
every Linux system), data/ (inputs and references), manifest.json and
cuda_check.py, which runs the check there:

  python3 scripts/cuda_kit.py --build build --out build/device
  # on the GPU machine, from the repository root:
  python3 build/device/cuda_check.py --kit build/device --out $OUT
"""

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from ga_scripts.paths import ROOT as SRC
from ga_scripts.reference_harness import padded_example_inputs, with_schedule

HERE = os.path.join(SRC, "scripts")

# Libraries every Linux system has; everything else a binary needs goes
# into the kit.
SYSTEM = ("linux-vdso", "libc.so", "libm.so", "libstdc++", "libgcc_s",
          "ld-linux", "libpthread", "libdl.so", "librt.so")


def run(cmd):
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"cuda_kit: {' '.join(cmd)} failed:\n{done.stdout}"
                 f"{done.stderr}")
    return done.stdout


def dependencies(path):
    """The non-system shared libraries `path` loads (ldd)."""
    found = []
    for line in run(["ldd", path]).splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m and not m.group(1).startswith(SYSTEM):
            found.append(m.group(2))
    return found


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--build", default=os.path.join(SRC, "build"))
    parser.add_argument("--out", default=None)
    parser.add_argument("--chip", default="sm_90")
    parser.add_argument("--seed", type=int, default=5)
    parser.add_argument("--imported", nargs="*", default=[],
                        metavar="FILE",
                        help="steps of ga-import (test/Import/Inputs/"
                        "export-*.mlir): k = 1, 2 and the naive k = 2 too")
    parser.add_argument("--bf16", action="store_true",
                        help="both examples at k = 1, 2 with gpu-bf16=true, "
                             "precision=bf16-mixed and precision=bf16, "
                        "against the device program emulated on the CPU")
    parser.add_argument("--attention", action="store_true",
                        help="the tiny GPT at k = 1, 2 and the imported "
                        "steps at k = 1 with attention-key-tile=4 "
                        "(train.attention over query and key tiles), "
                        "against the device program emulated on the CPU")
    parser.add_argument("--offload", action="store_true",
                        help="the tiny GPT at k = 1, 2 with every buffer "
                        "that ga-gpu-offload-buffers can move offloaded to "
                        "pinned host memory and back on the copy stream, "
                        "against the device program emulated on the CPU")
    parser.add_argument("--asserts", action="store_true",
                        help="the guarded gather of test/Integration/Inputs/"
                        "asserts with valid ids, and with an id out of "
                        "range (the step must fail with the assert)")
    args = parser.parse_args()
    out = args.out or os.path.join(args.build, "device")
    bin_dir = os.path.join(args.build, "bin")
    if os.path.exists(out):
        shutil.rmtree(out)
    for d in ("bin", "lib", "data", "work"):
        os.makedirs(os.path.join(out, d))
    work = os.path.join(out, "work")

    entries = []
    start = time.time()

    def add(tag, example, text, arrays, k, naive, expect_error=None,
            device_options="", rtol=None):
        """Compile `text` (a step at k micro-batches) for the CPU and for
        CUDA (with `device_options`); the CPU library's results on `arrays`
        are the reference, or, with expect_error (message fragments), the
        CPU run must fail with them and so must the device's. With
        device_options, the reference is the device program emulated on
        the CPU (ga-opt target=cuda gpu-emulate=true, then ga-run: the
        device's roundings, the CPU's arithmetic), checked within `rtol`."""
        data = os.path.join(out, "data", tag)
        os.makedirs(data)
        args_npy = []
        for i, a in enumerate(arrays):
            path = os.path.join(data, f"arg{i}.npy")
            np.save(path, a)
            args_npy.append(os.path.relpath(path, out))
        mlir = os.path.join(work, tag + ".mlir")
        with open(mlir, "w") as f:
            f.write(text)
        options = ["--pipeline-options", "naive=true"] if naive else []
        cpu_lib = os.path.join(work, tag + "_cpu.so")
        run([os.path.join(bin_dir, "ga-compile"), mlir, "-o", cpu_lib,
             *options])
        ref_dir = os.path.join(out, "data", tag + "_reference")
        cpu_run = [os.path.join(bin_dir, "ga-exec"), cpu_lib,
                   *[os.path.join(out, a) for a in args_npy],
                   "--out-dir", ref_dir]
        if device_options:
            emulated = os.path.join(work, tag + "_emulated.mlir")
            run([os.path.join(bin_dir, "ga-opt"), mlir,
                 f"--ga-pipeline=target=cuda gpu-emulate=true "
                 f"{device_options}" + (" naive=true" if naive else ""),
                 "-o", emulated])
            cpu_run = [os.path.join(bin_dir, "ga-run"), emulated,
                       *[os.path.join(out, a) for a in args_npy],
                       "--out-dir", ref_dir]
        if expect_error:
            done = subprocess.run(cpu_run, capture_output=True, text=True)
            missing = [f for f in expect_error if f not in done.stderr]
            if done.returncode != 1 or missing:
                sys.exit(f"cuda_kit: {tag}: the CPU step should fail with "
                         f"{expect_error}, got exit {done.returncode}:\n"
                         f"{done.stderr}")
            printed = ""
        else:
            printed = run(cpu_run)
        cuda_lib = os.path.join(out, "lib", f"lib{tag}_cuda.so")
        cuda_options = ["--pipeline-options",
                        f"chip={args.chip} {device_options}".strip() +
                        (" naive=true" if naive else "")]
        t0 = time.time()
        compiled = run([os.path.join(bin_dir, "ga-compile"), "--target=cuda",
                        mlir, "-o", cuda_lib, *cuda_options])
        kernels = re.search(r"kernels: (\d+)", compiled).group(1)
        entry = {
            "name": tag, "example": example, "microbatches": k,
            "naive": naive, "library": os.path.relpath(cuda_lib, out),
            "inputs": args_npy, "kernels": int(kernels),
        }
        if rtol:
            entry["rtol"] = rtol
            entry["options"] = device_options
        if expect_error:
            entry["expect_error"] = expect_error
        else:
            entry["reference"] = os.path.relpath(ref_dir, out)
            entry["cpu_loss"] = re.search(r"^loss: (\S+)", printed,
                                          re.M).group(1)
        entries.append(entry)
        print(f"{tag}: {kernels} kernels, compiled for {args.chip} in "
              f"{time.time() - t0:.1f} s", flush=True)

    inputs = padded_example_inputs(np.random.default_rng(args.seed))
    for name in ("mlp", "tiny_gpt"):
        with open(os.path.join(SRC, "examples", name + ".mlir")) as f:
            source = f.read()
        for k, naive in ((1, False), (2, False), (4, False), (4, True)):
            tag = f"{name}_k{k}" + ("_naive" if naive else "")
            add(tag, name, with_schedule(source, name, microbatches=k),
                inputs[name], k, naive)

    # gpu-bf16: products of operands rounded to bfloat16, against the device
    # program emulated on the CPU. Within half a bfloat16 unit of the
    # largest result (2^-9): a GEMM operand the device computes a few ulps
    # off the CPU may round to the neighbouring bfloat16, which moves a
    # product by one bfloat16 unit of that operand; bf16 itself moves the
    # tiny GPT's gradients 0.2-0.8% from float32.
    if args.bf16:
        for name in ("mlp", "tiny_gpt"):
            with open(os.path.join(SRC, "examples", name + ".mlir")) as f:
                source = f.read()
            for k in (1, 2):
                add(f"{name}_k{k}_bf16", name + "_bf16",
                    with_schedule(source, name, microbatches=k),
                    inputs[name], k, False, device_options="gpu-bf16=true",
                    rtol=2.0 ** -9)
                # precision=bf16-mixed: bfloat16 copies made by the step's
                # kernels, read by cuBLAS as stored (the _bf16in GEMMs); the
                # same tolerance, for the same reason.
                add(f"{name}_k{k}_mixed", name + "_mixed",
                    with_schedule(source, name, microbatches=k),
                    inputs[name], k, False,
                    device_options="precision=bf16-mixed", rtol=2.0 ** -9)
                # precision=bf16: the per-example products write bfloat16
                # (cuBLASLt with a bfloat16 D). cuBLAS sums in another order
                # than the emulation, so a result may round to the
                # neighbouring bfloat16 (2^-8), which later products carry:
                # two bfloat16 units (2^-7), as for the fused attention.
                add(f"{name}_k{k}_bf16act", name + "_bf16act",
                    with_schedule(source, name, microbatches=k),
                    inputs[name], k, False,
                    device_options="precision=bf16", rtol=2.0 ** -7)

    # The attention over query and key tiles (its nested loops, the masks
    # as float tiles, the tile's batched GEMMs): against the device program
    # emulated on the CPU, within the float32 steps' tolerance.
    def add_tiny_gpt(variant, device_options):
        """The tiny GPT at k = 1, 2 with `device_options`, against its
        device program emulated on the CPU, within the float32 steps'
        tolerance."""
        with open(os.path.join(SRC, "examples", "tiny_gpt.mlir")) as f:
            source = f.read()
        for k in (1, 2):
            add(f"tiny_gpt_k{k}_{variant}", f"tiny_gpt_{variant}",
                with_schedule(source, "tiny_gpt", microbatches=k),
                inputs["tiny_gpt"], k, False, device_options=device_options,
                rtol=1e-4)

    if args.attention:
        add_tiny_gpt("tiles", "attention-key-tile=4")
        # The fused attention (attention=library: cuDNN's SDPA on the
        # device, the CPU runtime's reference in the emulation), in
        # bfloat16: within two bfloat16 units of the largest result
        # (2^-7): cuDNN's float32 sums run in another order than the
        # reference's, so a bfloat16 result of the call may round to the
        # neighbouring value (2^-8), which the step's later products carry.
        with open(os.path.join(SRC, "examples", "tiny_gpt.mlir")) as f:
            source = f.read()
        for k in (1, 2):
            add(f"tiny_gpt_k{k}_fused", "tiny_gpt_fused",
                with_schedule(source, "tiny_gpt", microbatches=k),
                inputs["tiny_gpt"], k, False,
                device_options="precision=bf16-mixed attention=library",
                rtol=2.0 ** -7)

    # host-offload: buffers to pinned host memory and back on the runtime's
    # copy stream, ordered by events (the pass asked to fit one byte, no
    # least size: every buffer whose copies hide moves). The copies change
    # no value.
    if args.offload:
        add_tiny_gpt("offload", "host-offload=true offload-budget=1 "
                     "offload-min-bytes=0")

    # Steps of ga-import (their arguments as exported_steps.py draws them).
    for path in args.imported:
        from exported_steps import arguments, with_schedule as scheduled
        name = os.path.basename(path).removesuffix(".mlir").replace("-", "_")
        with open(path) as f:
            text = f.read()
        arrays = arguments(text, np.random.default_rng(0))
        for k, naive in ((1, False), (2, False), (2, True)):
            tag = f"{name}_k{k}" + ("_naive" if naive else "")
            add(tag, name, scheduled(text, k) if k > 1 else text, arrays, k,
                naive)
        if args.attention:
            add(f"{name}_k1_tiles", name + "_tiles", text, arrays, 1, False,
                device_options="attention-key-tile=8", rtol=1e-4)

    # The asserts of a guarded gather: valid ids run, an id out of range
    # fails the step with the assert's message (asserts.py's inputs).
    if args.asserts:
        with open(os.path.join(SRC, "test", "Integration", "Inputs",
                               "asserts", "gather-step.mlir")) as f:
            text = f.read()
        from asserts import S, gather_inputs
        wte, ids, x, bad = gather_inputs()
        add("gather_valid", "gather", text, [wte, ids, x], 1, False)
        add("gather_invalid", "gather_invalid", text, [wte, bad, x], 1,
            False, expect_error=["index must be smaller than dim size",
                                 f"first at flat position {2 * S + 3}"])

    # The runner and the libraries it and the steps need.
    shutil.copy(os.path.join(bin_dir, "ga-exec"), os.path.join(out, "bin"))
    libs = set()
    for binary in [os.path.join(bin_dir, "ga-exec")] + [
            os.path.join(out, e["library"]) for e in entries]:
        libs.update(dependencies(binary))
    for lib in sorted(libs):
        target = os.path.join(out, "lib", os.path.basename(lib))
        if not os.path.exists(target):
            shutil.copy(lib, target)
    # The fused attention's backend, which the runtime loads with dlopen
    # from its own directory (no ldd dependency): cuDNN's, where it was
    # built.
    backend = os.path.join(os.path.dirname(bin_dir), "lib",
                           "libga_cudnn_attention.so")
    if os.path.exists(backend):
        shutil.copy(backend, os.path.join(out, "lib"))
    shutil.copy(os.path.join(HERE, "cuda_check.py"), out)
    with open(os.path.join(out, "manifest.json"), "w") as f:
        json.dump({"chip": args.chip, "entries": entries}, f, indent=1)
    shutil.rmtree(work)
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(out) for f in fs)
    print(f"kit: {out}, {len(entries)} steps, {size / 2**20:.1f} MiB, "
          f"built in {time.time() - start:.0f} s")


if __name__ == "__main__":
    main()
