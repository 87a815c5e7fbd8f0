#!/usr/bin/python3
"""CUDA benchmark of the tiny-GPT training step: ga-opt against PyTorch.

Two halves, because the GPU machine has no MLIR:

  python3 scripts/bench_cuda.py prepare [--build build] [--out DIR]
      (here) generates the tiny GPT at each size (examples/gen_tiny_gpt.py),
      compiles its CUDA step library (ga-compile --target=cuda), writes the
      inputs, and puts them with the Python binding (python/ga_step) and
      this script into DIR (default build/device/bench);
  python3 build/device/bench/bench_cuda.py run [--repeat 20]
      (on the GPU machine, needs NumPy and PyTorch) times, in one process:
      the ga-opt step through the binding, with host arrays in and out
      (the copies through host memory in its time) and with CUDA tensors
      in and out (device to device), and the same model,
      data and loss in PyTorch eager on the GPU (float32, TF32 off),
      forward and backward, synchronized, and the same with the forward
      through torch.compile (--no-compile leaves it out); minimum over
      --repeat runs after warm-ups (torch.compile's include its
      compilation). Prints both losses, the worst gradient's difference
      to PyTorch eager's (|ga - torch| / |torch|), tokens per second,
      the peak device memory of both (ga-opt's: its runtime's count of
      the step's buffers, plus the arguments, its copies of them, the
      results and cuBLAS's workspace), the model FLOPs utilization (MFU: nanoGPT's count of the
      step's work over the time and the device's dense peak, float32 or
      bf16), the times and the ratios;
      --tolerance T exits 1 when the loss or a gradient differs by more;
      --torch-checkpoint adds PyTorch eager with each layer through
      torch.utils.checkpoint (its time, peak and gradients). A step
      compiled under memory-budget also prints the planner's line
      (memory_plan, recorded by prepare) and its predicted device peak
      against the runtime allocator's high-water mark (the step's
      buffers, plus its arguments and cuBLAS's workspace as the planner
      counts them).
      Inputs over 32 MiB (GPT-2 124M's 500 MB of parameters) are not
      stored: `run` draws them from their seed.
Not a test.
"""

import argparse
import json
import math
import os
import re
import shutil
import subprocess
import sys
import time

import numpy as np

from ga_scripts import tiny_gpt
from ga_scripts.paths import ROOT

# The model's sizes are tiny_gpt.SIZES; those benchmarked here by default.
SIZES = {name: tiny_gpt.SIZES[name] for name in
         ("tiny", "small", "medium", "gpt2", "gpt2_b8", "gpt2_b16")}
# Dense peak TFLOP/s of a device (NVIDIA's data sheets): float32 on CUDA
# cores (TF32 off) and bfloat16 on tensor cores, by a part of the name
# torch.cuda.get_device_name() gives; the first that matches.
PEAK_TFLOPS = [("H100 PCIe", 51.2, 756.0), ("H100", 66.9, 989.4),
               ("H200", 66.9, 989.4), ("A100", 19.5, 312.0),
               ("L40S", 91.6, 362.1)]
# cuBLAS's workspace, which the runtime allocates beside the step's own
# buffers (GA_CUDA_BLAS_WORKSPACE_BYTES in include/ga/Runtime/ga_cuda.h).
BLAS_WORKSPACE_BYTES = 32 << 20
# Where the PyTorch baselines run ("cpu" checks them without a GPU).
DEVICE = "cuda"


def peak_flops(device, bf16):
    """The device's dense peak FLOP/s for the step's arithmetic, or None
    for a device not in PEAK_TFLOPS."""
    for part, f32, b16 in PEAK_TFLOPS:
        if part in device:
            return (b16 if bf16 else f32) * 1e12
    return None


class DeviceMemory:
    """The CUDA runtime's count of a step library's own device buffers
    (ga_cuda_memory_stats: the caching allocator's blocks in use, their
    peak since ga_cuda_memory_reset_peak)."""

    def __init__(self, library):
        import ctypes

        class Stats(ctypes.Structure):
            _fields_ = [("current_bytes", ctypes.c_int64),
                        ("peak_bytes", ctypes.c_int64),
                        ("allocations", ctypes.c_int64)]
        self.ctypes, self.Stats = ctypes, Stats
        self.lib = ctypes.CDLL(library)

    def reset(self):
        self.lib.ga_cuda_memory_reset_peak()

    def peak(self):
        stats = self.Stats()
        self.lib.ga_cuda_memory_stats(self.ctypes.byref(stats))
        return stats.peak_bytes

    def empty_cache(self):
        """Gives the step's cached free blocks back to the driver, so that
        PyTorch and the next model run in the memory they would have alone
        (a library built before ga_cuda_empty_cache keeps its cache)."""
        if hasattr(self.lib, "ga_cuda_empty_cache"):
            self.lib.ga_cuda_empty_cache.restype = self.ctypes.c_size_t
            return self.lib.ga_cuda_empty_cache()
        return 0
# Inputs larger than this are drawn from their seed by `run`, not stored.
STORE_BYTES = 32 << 20


def entry_arrays(here, e):
    """The inputs of manifest entry `e` of the benchmark folder `here`: its
    stored .npy files, or drawn again from its seed."""
    if e.get("stored", True):
        return [np.load(os.path.join(here, f"{e['name']}_arg{i}.npy"))
                for i in range(e["inputs"])]
    params, tokens, labels = tiny_gpt.inputs(*e["size"],
                                    np.random.default_rng(e["seed"]),
                                    e["std"])
    return params + [tokens, labels]


def prepare(args):
    out = args.out or os.path.join(args.build, "device", "bench")
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    shutil.copytree(os.path.join(ROOT, "python", "ga_step"),
                    os.path.join(out, "ga_step"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(os.path.abspath(__file__), out)
    # The shared package the script imports (the kit runs it from `out`,
    # whose folder is the script's own and so on its path).
    shutil.copytree(os.path.join(ROOT, "scripts", "ga_scripts"),
                    os.path.join(out, "ga_scripts"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    manifest = []
    for seed, name in enumerate(args.sizes.split(",")):
        size = SIZES[name]
        mlir = tiny_gpt.write_step(os.path.join(out, f"{name}.mlir"), size)
        lib = os.path.join(out, f"lib{name}_cuda.so")
        start = time.time()
        compiled = subprocess.run(
            [os.path.join(args.build, "bin", "ga-compile"), "--target=cuda",
             mlir, "-o", lib,
             f"--kernel-report={os.path.join(out, name + '_kernels.json')}",
             "--pipeline-options",
             f"chip={args.chip} {args.pipeline_options}".strip()],
            check=True, stdout=subprocess.PIPE, text=True)
        # Under a memory budget, the planner's choice and predicted peak.
        plan = re.search(r"^memory_plan: .*$", compiled.stdout, re.M)
        planned = re.search(r"planned peak (\d+) bytes", compiled.stdout)
        os.remove(mlir)
        params, tokens, labels = tiny_gpt.inputs(*size, np.random.default_rng(seed),
                                        tiny_gpt.std_of(name))
        arrays = params + [tokens, labels]
        stored = sum(a.nbytes for a in arrays) <= STORE_BYTES
        if stored:
            for i, a in enumerate(arrays):
                np.save(os.path.join(out, f"{name}_arg{i}.npy"), a)
        manifest.append({"name": name, "size": size,
                         "library": os.path.basename(lib),
                         "inputs": len(arrays), "stored": stored,
                         "seed": seed, "std": tiny_gpt.std_of(name),
                         "pipeline_options": args.pipeline_options,
                         "plan": plan.group(0) if plan else None,
                         "planned_peak": (int(planned.group(1)) if planned
                                          else None)})
        print(f"{name} {size}: compiled for {args.chip} in "
              f"{time.time() - start:.1f} s", flush=True)
    with open(os.path.join(out, "bench.json"), "w") as f:
        json.dump(manifest, f, indent=1)


def _torch_step(torch, size, arrays, repeat, compiled=False,
                autocast=False, checkpoint=False):
    """(min step seconds, loss, gradients as float64 host arrays, peak
    device bytes) of the model in PyTorch on the GPU: eager, or with the
    forward through torch.compile (its backward compiled by AOTAutograd),
    after warm-up runs that include the compilation; under bf16 autocast
    with `autocast`; with each layer through torch.utils.checkpoint
    (recomputed in the backward pass) with `checkpoint`."""
    p, forward = tiny_gpt.torch_model(torch, size, arrays, DEVICE,
                                      checkpoint)
    dev = p[0].device

    def mixed():
        with torch.autocast("cuda", dtype=torch.bfloat16):
            return forward()

    step = mixed if autocast else forward
    step = torch.compile(step) if compiled else step
    warmup = 3 if compiled else 1
    best = math.inf
    cuda = dev.type == "cuda"
    if cuda:
        torch.cuda.reset_peak_memory_stats()
    for i in range(repeat + warmup):
        for t in p:
            t.grad = None
        if cuda:
            torch.cuda.synchronize()
        start = time.perf_counter()
        loss = step()
        loss.backward()
        if cuda:
            torch.cuda.synchronize()
        if i >= warmup:
            best = min(best, time.perf_counter() - start)
    grads = [t.grad.double().cpu().numpy() for t in p]
    peak = torch.cuda.max_memory_allocated() if cuda else 0
    return best, float(loss.detach()), grads, peak


def torch_step(torch, *args, **kwargs):
    """_torch_step, then its caching allocator's blocks back to the
    driver: the next model (and ga-opt's step) runs in the memory it would
    have alone."""
    result = _torch_step(torch, *args, **kwargs)
    if DEVICE == "cuda":
        torch.cuda.empty_cache()
    return result


def run(args):
    if args.cuda_graph:
        # Read by libga_cuda_runtime when it initializes (the first step).
        os.environ["GA_CUDA_GRAPH"] = "1"
    # The kit's folder, which holds this script, ga_step and ga_scripts
    # (on the path as the script's own folder).
    here = os.path.dirname(os.path.abspath(__file__))
    import ga_step
    import torch
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    with open(os.path.join(here, "bench.json")) as f:
        manifest = json.load(f)
    device = torch.cuda.get_device_name()
    # MFU against the tensor cores' bf16 peak where the products are bf16.
    bf16 = manifest_precision(here) != "float32"
    print(f"ga-opt CUDA benchmark, tiny-GPT step on "
          f"{device} ({manifest_precision(here)}; "
          f"PyTorch {'bf16 autocast' if args.autocast else 'float32'}, TF32 "
          f"off; min of {args.repeat} runs after a warm-up)")
    print(f"{'model':7} {'B,S,V,D,H,F,L':>30} {'host ms':>10} "
          f"{'device ms':>10} {'eager ms':>9} {'ratio':>6} {'tokens/s':>9} "
          f"{'loss':>10} {'torch loss':>10} {'grad diff':>9} "
          f"{'eager peak MiB':>14}")
    failures = 0
    for e in manifest:
        size = tuple(e["size"])
        arrays = entry_arrays(here, e)
        step = ga_step.load(os.path.join(here, e["library"]))
        results = step(*arrays)  # warm-up
        best = math.inf
        for _ in range(args.repeat):
            start = time.perf_counter()
            results = step(*arrays)
            best = min(best, time.perf_counter() - start)
        loss, _ = step.summary(results)
        # The same step on device arrays (CUDA tensors in, CUDA tensors
        # out: the copies are device to device), as a PyTorch training
        # loop that keeps its parameters on the GPU calls it.
        dev_args = [torch.from_numpy(np.ascontiguousarray(a)).cuda()
                    for a in arrays]
        dev_out = [torch.empty(r.shape, device="cuda",
                               dtype=getattr(torch, r.numpy_dtype.name))
                   for r in step.signature.results]
        step(*dev_args, out=dev_out)  # warm-up
        # The device memory of a step on device arrays: its own buffers at
        # their peak, the arguments (the caller's and the step's copies of
        # them, which its runtime does not count as step buffers) and the
        # results (as PyTorch's peak counts the parameters, the batch and
        # the gradients), cuBLAS's workspace.
        memory = DeviceMemory(os.path.join(here, e["library"]))
        memory.reset()
        step(*dev_args, out=dev_out)
        step_bytes = memory.peak()
        io_bytes = sum(2 * t.numel() * t.element_size() for t in dev_args)
        io_bytes += sum(t.numel() * t.element_size() for t in dev_out)
        resident = math.inf
        for _ in range(args.repeat):
            torch.cuda.synchronize()
            start = time.perf_counter()
            step(*dev_args, out=dev_out)  # returns once the results are in
            resident = min(resident, time.perf_counter() - start)
        resident_results = [o.cpu().numpy() for o in dev_out]
        del dev_args, dev_out
        memory.empty_cache()
        tt, tloss, tgrads, tpeak = torch_step(torch, size, arrays,
                                              args.repeat,
                                              autocast=args.autocast)
        # Every gradient against PyTorch eager's on the same inputs:
        # |ga - torch| / |torch| (norms), the worst parameter.
        worst = 0.0
        for got in (results, resident_results):
            grads = [r for r, spec in zip(got, step.signature.results)
                     if spec.role == "gradient"]
            worst = max([worst] + [np.linalg.norm(g.astype(np.float64) - t) /
                                   max(np.linalg.norm(t), 1e-30)
                                   for g, t in zip(grads, tgrads)])
        loss_diff = max(abs(loss - tloss),
                        abs(step.summary(resident_results)[0] - tloss)
                        ) / abs(tloss)
        if args.tolerance and not (worst <= args.tolerance and
                                   loss_diff <= args.tolerance):
            failures += 1
            print(f"FAIL {e['name']}: against PyTorch, loss {loss_diff:.1e}, "
                  f"gradients {worst:.1e} > {args.tolerance}")
        tokens = size[0] * size[1] / resident
        print(f"{e['name']:7} {','.join(map(str, size)):>30} "
              f"{best * 1e3:>10.3f} {resident * 1e3:>10.3f} "
              f"{tt * 1e3:>9.3f} {resident / tt:>6.2f} "
              f"{tokens:>9.0f} {loss:>10.5f} {tloss:>10.5f} {worst:>9.1e} "
              f"{tpeak / 2**20:>14.1f}", flush=True)
        flops = tiny_gpt.step_flops(size)
        peak = peak_flops(device, bf16)

        def mfu(seconds):
            return (f"{100 * flops / seconds / peak:.1f}%" if peak else "n/a")
        print(memory_line(step_bytes, io_bytes, tpeak, mfu(resident),
                          mfu(tt), flops, peak, bf16), flush=True)
        if e.get("planned_peak"):
            # The planner's prediction (the step's buffers as the caching
            # allocator holds them, its arguments once, cuBLAS's
            # workspace) against the runtime allocator's high-water mark
            # with the same parts.
            inputs = sum(a.nbytes for a in arrays)
            measured = step_bytes + inputs + BLAS_WORKSPACE_BYTES
            print(f"  {e['plan']}\n  device peak: predicted "
                  f"{e['planned_peak']} bytes, measured {measured} bytes "
                  f"(the allocator's high-water mark of the step's buffers "
                  f"{step_bytes}, its arguments {inputs}, cuBLAS workspace "
                  f"{BLAS_WORKSPACE_BYTES}), measured / predicted "
                  f"{measured / e['planned_peak']:.4f}", flush=True)
        if args.torch_checkpoint:
            tk, kloss, kgrads, kpeak = torch_step(
                torch, size, arrays, args.repeat, autocast=args.autocast,
                checkpoint=True)
            kworst = max(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
                         for a, b in zip(kgrads, tgrads))
            print(f"  torch.utils.checkpoint (each layer): {tk * 1e3:.3f} ms, "
                  f"ga-opt (device arrays) / checkpoint "
                  f"{resident / tk:.2f}; peak {kpeak / 2**20:.1f} MiB; its "
                  f"gradients against eager's {kworst:.1e}", flush=True)
        if not args.no_compile:
            try:
                tc, _, _, _ = torch_step(torch, size, arrays, args.repeat,
                                         compiled=True,
                                         autocast=args.autocast)
                print(f"  torch.compile: {tc * 1e3:.3f} ms, ga-opt (device "
                      f"arrays) / torch.compile {resident / tc:.2f}; MFU "
                      f"{mfu(tc)}", flush=True)
            except Exception as error:  # no Triton, no compiler: noted
                print(f"  torch.compile failed: {type(error).__name__}: "
                      f"{str(error).splitlines()[0] if str(error) else ''}")
        if args.cuda_graph:
            import ctypes
            lib = ctypes.CDLL(os.path.join(here, e["library"]))
            lib.ga_cuda_graph_status.restype = ctypes.c_char_p
            status = lib.ga_cuda_graph_status()
            print(f"  cuda graph: {status.decode() if status else 'n/a'}")
        del step, results, grads, arrays, tgrads
    print("(ga-opt: the step library through python/ga_step, host ms with "
          "NumPy arrays in and out (copies through host memory included), "
          "device ms with CUDA tensors in and out; PyTorch on device "
          "tensors; ratios: ga-opt on device arrays / PyTorch eager, / "
          "torch.compile; tokens/s of ga-opt on device arrays; grad diff: "
          "the worst parameter's |ga - eager| / |eager| of both calls; "
          "memory: peak device bytes, ga-opt's from its runtime's allocator "
          "on device arrays, eager's torch.cuda.max_memory_allocated; MFU: "
          "step_flops / time / the device's dense peak)")
    return 1 if failures else 0


def memory_line(step_bytes, io_bytes, torch_peak, ga_mfu, torch_mfu, flops,
                peak, bf16):
    """The benchmark's line of peaks and MFU under a model's row (which
    gpu_campaign.py's table reads)."""
    ga_peak = step_bytes + io_bytes + BLAS_WORKSPACE_BYTES
    return (f"  memory: ga-opt {ga_peak / 2**20:.1f} MiB (step buffers "
            f"{step_bytes / 2**20:.1f}, arguments twice and results "
            f"{io_bytes / 2**20:.1f}, cuBLAS workspace "
            f"{BLAS_WORKSPACE_BYTES / 2**20:.0f}), eager "
            f"{torch_peak / 2**20:.1f} MiB, ratio "
            f"{ga_peak / torch_peak:.2f}; MFU: ga-opt {ga_mfu}, eager "
            f"{torch_mfu} ({flops / 1e12:.3f} TFLOP per step, peak "
            f"{peak / 1e12 if peak else 0:.1f} TFLOP/s "
            f"{'bf16' if bf16 else 'float32'})")


def manifest_precision(here):
    with open(os.path.join(here, "bench.json")) as f:
        options = json.load(f)[0].get("pipeline_options", "")
    if "precision=bf16-mixed" in options:
        return "bf16-mixed"
    if "precision=bf16" in options:
        return "bf16"
    return "bf16 GEMMs" if "gpu-bf16=true" in options else "float32"


def main():
    parser = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--out", default=None)
    p.add_argument("--chip", default="sm_90")
    p.add_argument("--sizes", default="tiny,small,medium")
    p.add_argument("--pipeline-options", default="",
                   help="more --ga-pipeline options for every step, e.g. "
                        "'gpu-bf16=true' or 'loss-chunk-rows=1024' (the "
                        "PyTorch baselines stay float32 and unchunked)")
    r = sub.add_parser("run")
    r.add_argument("--repeat", type=int, default=20)
    r.add_argument("--cuda-graph", action="store_true",
                   help="GA_CUDA_GRAPH=1: launch each step after the first "
                        "as one CUDA graph (prepare with --pipeline-options "
                        "check-labels=false: the label check reads device "
                        "memory within the step, which turns it off)")
    r.add_argument("--no-compile", action="store_true",
                   help="leave out the torch.compile baseline")
    r.add_argument("--torch-checkpoint", action="store_true",
                   help="also PyTorch eager with each layer through "
                        "torch.utils.checkpoint (its time and peak)")
    r.add_argument("--autocast", action="store_true",
                   help="PyTorch under bf16 autocast (for steps prepared "
                        "with precision=bf16, bf16-mixed or gpu-bf16=true)")
    r.add_argument("--tolerance", type=float, default=0.0,
                   help="fail (exit 1) when the loss or a gradient differs "
                        "from PyTorch eager's by more than this, relative")
    args = parser.parse_args()
    sys.exit(prepare(args) if args.command == "prepare" else run(args))


if __name__ == "__main__":
    main()
