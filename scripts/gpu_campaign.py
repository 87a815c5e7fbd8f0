#!/usr/bin/python3
"""Everything ga-opt checks and measures on a GPU, in one command there.

The GPU machine has a CUDA driver, Python, NumPy and PyTorch but no MLIR,
and a lent one is at hand for minutes: everything is compiled here, into
one folder that travels, and one command there runs it all in order of
importance, each stage under what is left of a deadline, and writes one
markdown report.

  python3 scripts/gpu_campaign.py prepare [--build build] [--out build/device]
      (here, about a minute) builds, under OUT:
        kit/    both examples at k = 1, 2, 4 and the naive k = 4 (and at
                k = 1, 2 with gpu-bf16, precision=bf16-mixed and bf16,
                against their emulation), the
                imported GPT-2 and nanoGPT steps at k = 1, 2 and the naive
                k = 2, the guarded gather with valid ids and with an id out
                of range: CUDA libraries, inputs, the CPU pipeline's
                results (scripts/cuda_kit.py; the tiny GPT and the
                imported steps with the attention over tiles too, the
                tiny GPT with host-offload at k = 1, 2), ga-exec
                and the libraries it needs;
        bench/  the tiny GPT at three sizes and GPT-2 124M's shape for the
                benchmark against PyTorch (scripts/bench_cuda.py prepare);
        graph/  the three small sizes again, compiled for CUDA graphs
                (check-labels=false);
        bf16/   GPT-2 124M's shape (B 4 and 16) in
                bf16 mixed precision (precision=bf16-mixed: products of
                bfloat16 copies, float32 everything else);
        large/  GPT-2 124M's shape at B 8 and 16 (S 1024), float32;
        budget/, budget-offload/  GPT-2 124M's shape at B 8 under a
                10 GiB device budget (memory-budget), with checkpoints,
                and with checkpoints and host offload;
        attention/  GPT-2 124M's shape at B 8 with the attention over
                tiles of 128 queries and keys (attention-key-tile=128),
                and attention-1024/ as one tile of 1024 (the backward
                pass recomputes the probabilities: no scores kept),
                float32;
        this script and cuda_gemm_check.py.
  python3 OUT/gpu_campaign.py run --out $OUT [--deadline 480]
      (there) runs, in this order: the device's facts (nvidia-smi, ldd of
      what travelled, the pinned host-device bandwidth each way), the step checks against the CPU (cuda_check.py:
      every result within 1e-4 of the CPU's, counts equal, the assert's
      error), the runtime's GEMM entry points against float64
      (cuda_gemm_check.py), the benchmark (float32, then CUDA graphs,
      then bf16-mixed against PyTorch's bf16 autocast, then precision=bf16
      with cuDNN's fused attention, attention=library, against autocast
      eager and compiled), each against
      PyTorch eager and torch.compile in one process, the gradients
      against PyTorch eager's, with both peaks of device memory and the
      MFU; then GA_CUDA_PROFILE's kernel times of the 124M step (float32
      and bf16), each kernel's against the bytes of the kernel report
      that `prepare` wrote beside the library (ga_scripts/kernel_bandwidth.py:
      the bandwidth it reaches, its share of the device's), then the float32 benchmark at B 8 and 16, then B 8
      under a 10 GiB device budget (the allocator's high-water mark
      against the planner's prediction, the step time against PyTorch
      eager and eager with each layer through torch.utils.checkpoint, for
      checkpoints and for checkpoints with host offload), and last B 8
      with the attention over tiles of 128 queries and keys, then as one
      tile of 1024. `--only STAGE,...`
      runs some stages (device, steps, gemm, bench, graph, bf16, fused,
      profile, large, budget, attention).
  python3 scripts/gpu_campaign.py table DIR [--write DOC | --check DOC]
      the float32 benchmark of the report in DIR (campaign.md and
      campaign.log) as a markdown table, written into or checked against
      DOC between <!-- gpu-bench:begin --> and <!-- gpu-bench:end -->
      (docs/cuda.md's table comes from docs/campaigns/, checked by
      test/Tools/gpu-campaign-table.test). Writes OUT/campaign.md (the report), OUT/campaign.log
      (every stage's output) and cuda_check.md; exits 1 when a check
      fails.

On the device tool: carry ["build/device"] and run
  python3 build/device/gpu_campaign.py run --out $OUT
with a timeout of the deadline plus a minute.
"""

import argparse
import datetime
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time

from ga_scripts import kernel_bandwidth
from ga_scripts.paths import child_env

HERE = os.path.dirname(os.path.abspath(__file__))


def prepare(args):
    out = os.path.abspath(args.out)
    build = os.path.abspath(args.build)
    py = sys.executable
    if os.path.exists(out):
        shutil.rmtree(out)
    os.makedirs(out)
    src = os.path.dirname(HERE)
    imported = [os.path.join(src, "test", "Import", "Inputs", f)
                for f in ("export-gpt2.mlir", "export-nanogpt-sdpa.mlir")]
    steps = [
        ("kit", [py, os.path.join(HERE, "cuda_kit.py"), "--build", build,
                 "--out", os.path.join(out, "kit"), "--chip", args.chip,
                 "--asserts", "--bf16", "--attention", "--offload",
                 "--imported",
                 *imported]),
        ("bench", [py, os.path.join(HERE, "bench_cuda.py"), "prepare",
                   "--build", build, "--out", os.path.join(out, "bench"),
                   "--chip", args.chip,
                   "--sizes", "gpt2,medium,small,tiny"]),
        ("graph", [py, os.path.join(HERE, "bench_cuda.py"), "prepare",
                   "--build", build, "--out", os.path.join(out, "graph"),
                   "--chip", args.chip, "--sizes", "tiny,small,medium",
                   "--pipeline-options", "check-labels=false"]),
        ("bf16", [py, os.path.join(HERE, "bench_cuda.py"), "prepare",
                  "--build", build, "--out", os.path.join(out, "bf16"),
                  "--chip", args.chip, "--sizes", "gpt2,gpt2_b16",
                  "--pipeline-options", "precision=bf16-mixed"]),
        # The fused attention (cuDNN's SDPA, attention=library) with
        # bfloat16 activations (precision=bf16: autocast's storage),
        # against bf16 autocast, eager and compiled.
        ("fused", [py, os.path.join(HERE, "bench_cuda.py"), "prepare",
                   "--build", build, "--out", os.path.join(out, "fused"),
                   "--chip", args.chip, "--sizes", "gpt2,gpt2_b16",
                   "--pipeline-options",
                   "precision=bf16 attention=library"]),
        ("large", [py, os.path.join(HERE, "bench_cuda.py"), "prepare",
                   "--build", build, "--out", os.path.join(out, "large"),
                   "--chip", args.chip, "--sizes", "gpt2_b8,gpt2_b16"]),
        ("attention", [py, os.path.join(HERE, "bench_cuda.py"), "prepare",
                       "--build", build, "--out",
                       os.path.join(out, "attention"), "--chip", args.chip,
                       "--sizes", "gpt2_b8", "--pipeline-options",
                       "attention-key-tile=128"]),
        # Under a device budget that the unplanned step exceeds (BUDGET):
        # checkpoints only, then checkpoints and host offload; the run
        # compares each with PyTorch's torch.utils.checkpoint and the
        # allocator's high-water mark with the planner's prediction.
        ("budget", [py, os.path.join(HERE, "bench_cuda.py"), "prepare",
                    "--build", build, "--out", os.path.join(out, "budget"),
                    "--chip", args.chip, "--sizes", "gpt2_b8",
                    "--pipeline-options", f"memory-budget={BUDGET}"]),
        ("budget-offload", [py, os.path.join(HERE, "bench_cuda.py"),
                            "prepare", "--build", build, "--out",
                            os.path.join(out, "budget-offload"), "--chip",
                            args.chip, "--sizes", "gpt2_b8",
                            "--pipeline-options",
                            f"memory-budget={BUDGET} host-offload=true"]),
        # One tile of all 1024 queries and keys: no loop of small products,
        # and still no [B, H, S, S] tensor kept for the backward pass.
        ("attention-1024", [py, os.path.join(HERE, "bench_cuda.py"),
                            "prepare", "--build", build, "--out",
                            os.path.join(out, "attention-1024"), "--chip",
                            args.chip, "--sizes", "gpt2_b8",
                            "--pipeline-options",
                            "attention-key-tile=1024"]),
    ]
    for name, cmd in steps:
        start = time.time()
        print(f"prepare {name}: {' '.join(map(shlex.quote, cmd))}",
              flush=True)
        done = subprocess.run(cmd)
        if done.returncode != 0:
            sys.exit(f"gpu_campaign: preparing {name} failed "
                     f"(exit {done.returncode})")
        print(f"prepare {name}: {time.time() - start:.0f} s", flush=True)
    # The benchmarks load the runtime from the kit's lib/.
    shutil.copy(os.path.abspath(__file__), out)
    shutil.copy(os.path.join(HERE, "cuda_gemm_check.py"), out)
    # The shared package this script imports where it runs.
    shutil.copytree(os.path.join(HERE, "ga_scripts"),
                    os.path.join(out, "ga_scripts"), dirs_exist_ok=True,
                    ignore=shutil.ignore_patterns("__pycache__"))
    size = sum(os.path.getsize(os.path.join(d, f))
               for d, _, fs in os.walk(out) for f in fs)
    print(f"gpu_campaign: {out}, {size / 2**20:.1f} MiB (the device tool "
          f"carries 64 MiB)")
    if size > 60 * 2**20:
        sys.exit("gpu_campaign: the folder is too large to travel")


class Campaign:
    def __init__(self, out, deadline, only):
        self.out = out
        self.only = only
        self.end = time.time() + deadline
        self.log = open(os.path.join(out, "campaign.log"), "w")
        self.rows = []  # (stage, status, seconds)
        self.failed = 0

    def stage(self, key, name, cmd, env=None, budget=None,
              must_pass=True):
        """Runs `cmd` with its output into the log (and stdout), under
        what is left of the deadline (and `budget` seconds at most);
        stages whose `key` --only leaves out are skipped."""
        if self.only and key not in self.only:
            return None
        left = self.end - time.time()
        if budget:
            left = min(left, budget)
        if left < 10:
            self.rows.append((name, "not run (deadline)", 0))
            print(f"== {name}: not run, the deadline is near", flush=True)
            return None
        header = f"\n== {name}: {' '.join(map(shlex.quote, cmd))}\n"
        self.log.write(header)
        self.log.flush()
        print(header, end="", flush=True)
        start = time.time()
        full = dict(os.environ, PYTHONUNBUFFERED="1", **(env or {}))
        proc = subprocess.Popen(cmd, stdout=subprocess.PIPE,
                                stderr=subprocess.STDOUT, text=True, env=full)
        lines = []
        try:
            import selectors
            sel = selectors.DefaultSelector()
            sel.register(proc.stdout, selectors.EVENT_READ)
            while True:
                remaining = start + left - time.time()
                if remaining <= 0:
                    raise subprocess.TimeoutExpired(cmd, left)
                if not sel.select(timeout=min(remaining, 5)):
                    continue
                line = proc.stdout.readline()
                if not line:
                    break
                lines.append(line)
                self.log.write(line)
                self.log.flush()
                print(line, end="", flush=True)
            rc = proc.wait(timeout=max(1, start + left - time.time()))
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            rc = "timeout"
        seconds = time.time() - start
        ok = rc == 0
        status = "ok" if ok else f"FAIL (exit {rc})"
        if not ok and not must_pass:
            status = f"exit {rc}"
        if not ok and must_pass:
            self.failed += 1
        self.rows.append((name, status, seconds))
        self.log.write(f"== {name}: {status}, {seconds:.1f} s\n")
        self.log.flush()
        print(f"== {name}: {status}, {seconds:.1f} s", flush=True)
        return "".join(lines)


def section(text, start, stop=None):
    """The lines of `text` from the first line holding `start`."""
    if not text or start not in text:
        return ""
    part = text[text.index(start):]
    if stop and stop in part:
        part = part[:part.index(stop)]
    return part


def nvidia_libraries():
    """The environment that points the fused attention's backend at cuDNN
    and the CUDA runtime library where they are not on the loader's path:
    PyTorch's wheels carry them under site-packages/nvidia/ (GA_CUDNN_LIBRARY
    for cuDNN, CUDNN_FRONTEND_CUDART_LIB_NAME for cudnn-frontend's
    libcudart)."""
    import glob
    import site
    found = {}
    roots = [p for p in site.getsitepackages() + [site.getusersitepackages()]
             if os.path.isdir(os.path.join(p, "nvidia"))]
    for variable, pattern in (("GA_CUDNN_LIBRARY", "libcudnn.so.9"),
                              ("CUDNN_FRONTEND_CUDART_LIB_NAME",
                               "libcudart.so.1[23]")):
        if os.environ.get(variable):
            continue
        for root in roots:
            hits = sorted(glob.glob(os.path.join(root, "nvidia", "**",
                                                 pattern), recursive=True))
            if hits:
                found[variable] = hits[-1]
                break
    return found


def run(args):
    root = HERE
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    c = Campaign(out, args.deadline,
                 set(args.only.split(",")) if args.only else None)
    kit = os.path.join(root, "kit")
    lib = os.path.join(kit, "lib")
    env = {"LD_LIBRARY_PATH": lib + (":" + os.environ["LD_LIBRARY_PATH"]
                                     if os.environ.get("LD_LIBRARY_PATH")
                                     else "")}
    env.update(nvidia_libraries())
    py = sys.executable
    facts = c.stage("device", "device", ["bash", "-c",
                               "nvidia-smi --query-gpu=name,memory.total,"
                               "driver_version,clocks.max.sm --format=csv; "
                               f"ldd {kit}/bin/ga-exec | grep 'not found'; "
                               f"python3 -c 'import torch, numpy; print("
                               "\"torch\", torch.__version__, \"numpy\", "
                               "numpy.__version__)'; "
                               f"python3 -c '{BANDWIDTH_SNIPPET}'"],
                    env=env, budget=60, must_pass=False)
    check = c.stage("steps", "steps against the CPU (cuda_check.py)",
                    [py, os.path.join(kit, "cuda_check.py"), "--kit", kit,
                     "--out", out, "--results",
                     os.path.join(tempfile.mkdtemp(), "results"),
                     "--repeat", "5"], env=env, budget=120)
    c.stage("gemm", "GEMM entry points (cuda_gemm_check.py)",
            [py, os.path.join(root, "cuda_gemm_check.py"), "--runtime",
             os.path.join(lib, "libga_cuda_runtime.so")], env=env,
            budget=90)
    bench = c.stage("bench", "benchmark, float32",
                    [py, os.path.join(root, "bench", "bench_cuda.py"), "run",
                     "--repeat", "10", "--tolerance", "1e-3"], env=env,
                    budget=240)
    graph = c.stage("graph", "benchmark, CUDA graphs",
                    [py, os.path.join(root, "graph", "bench_cuda.py"), "run",
                     "--repeat", "10", "--cuda-graph", "--no-compile",
                     "--tolerance", "1e-3"], env=env, budget=90)
    bf16 = c.stage("bf16", "benchmark, bf16-mixed against bf16 autocast",
                   [py, os.path.join(root, "bf16", "bench_cuda.py"), "run",
                    "--repeat", "10", "--autocast", "--no-compile"],
                   env=env, budget=120, must_pass=False)
    fused = c.stage("fused", "benchmark, precision=bf16 with cuDNN's fused "
                    "attention (attention=library) against bf16 autocast, "
                    "eager and torch.compile",
                    [py, os.path.join(root, "fused", "bench_cuda.py"), "run",
                     "--repeat", "10", "--autocast"],
                    env=env, budget=180, must_pass=False)
    if fused:
        bf16 = (bf16 or "") + ("\n\nprecision=bf16 with the fused "
                               "attention:\n\n") + fused
    profile = ""
    # The device's copy bandwidth for the kernels' table (the kernel
    # report's presets: H200 4.3 TB/s, H100 3.0 TB/s).
    bandwidth = 4300 if facts and "H200" in facts else 3000
    for folder in sorted(os.listdir(root)):
        bench_dir = os.path.join(root, folder)
        if os.path.exists(os.path.join(bench_dir, "libgpt2_cuda.so")):
            timed = c.stage(
                "profile", f"GA_CUDA_PROFILE of the 124M step ({folder})",
                [py, "-c", PROFILE_SNIPPET], env=dict(
                    child_env(bench_dir, env=env), GA_CUDA_PROFILE="all"),
                budget=60,
                must_pass=False) or ""
            profile += timed
            # Each kernel's time against its bytes in the kernel report
            # that bench_cuda.py prepare wrote beside the library.
            report = os.path.join(bench_dir, "gpt2_kernels.json")
            if timed and os.path.exists(report):
                joined, products, missing = kernel_bandwidth.join(
                    json.load(open(report)),
                    kernel_bandwidth.parse_profile(timed), bandwidth * 1e9)
                profile += (f"\n{folder}: " + kernel_bandwidth.table(
                    joined, products, missing, bandwidth * 1e9))
    large = c.stage("large", LARGE,
                    [py, os.path.join(root, "large", "bench_cuda.py"), "run",
                     "--repeat", "5", "--tolerance", "1e-3"], env=env,
                    budget=240)
    budget = ""
    for folder, title in (("budget", BUDGET_KEEP),
                          ("budget-offload", BUDGET_OFFLOAD)):
        budget += c.stage("budget", title,
                          [py, os.path.join(root, folder, "bench_cuda.py"),
                           "run", "--repeat", "5", "--tolerance", "1e-3",
                           "--no-compile", "--torch-checkpoint"], env=env,
                          budget=120, must_pass=False) or ""
    attention = c.stage("attention", ATTENTION,
                        [py, os.path.join(root, "attention", "bench_cuda.py"),
                         "run", "--repeat", "5", "--tolerance", "1e-3"],
                        env=env, budget=150, must_pass=False)
    attention = (attention or "") + (c.stage(
        "attention", ATTENTION_WHOLE,
        [py, os.path.join(root, "attention-1024", "bench_cuda.py"), "run",
         "--repeat", "5", "--tolerance", "1e-3", "--no-compile"],
        env=env, budget=90, must_pass=False) or "")
    write_report(c, args, facts, check, bench, graph, bf16, profile, large,
                 attention, budget)
    return 1 if c.failed else 0


# The host-device bandwidth of pinned memory, each way (256 MiB copies,
# best of 5, CUDA events): what host-offload's host-bandwidth option
# assumes (20 GB/s by default). No single quotes: it runs inside them.
BANDWIDTH_SNIPPET = r"""
import torch
n = 256 << 20
h = torch.empty(n, dtype=torch.uint8).pin_memory()
d = torch.empty(n, dtype=torch.uint8, device="cuda")
for name, dst, src in (("host to device", d, h), ("device to host", h, d)):
    best = None
    for _ in range(5):
        a = torch.cuda.Event(enable_timing=True)
        b = torch.cuda.Event(enable_timing=True)
        a.record()
        dst.copy_(src, non_blocking=True)
        b.record()
        torch.cuda.synchronize()
        ms = a.elapsed_time(b)
        best = ms if best is None else min(best, ms)
    print(f"pinned copy, {name}: {n / best / 1e6:.1f} GB/s", flush=True)
"""


# Runs the 124M step three times through the binding with GA_CUDA_PROFILE=1
# (the runtime prints the costliest kernels of the steps after the first at
# exit), its inputs as the benchmark has them.
PROFILE_SNIPPET = r'''
import json, os, sys
import bench_cuda, ga_step
here = os.path.dirname(os.path.abspath(bench_cuda.__file__))
e = [m for m in json.load(open(os.path.join(here, "bench.json")))
     if m["name"] == "gpt2"][0]
arrays = bench_cuda.entry_arrays(here, e)
step = ga_step.load(os.path.join(here, e["library"]))
for _ in range(3):
    r = step(*arrays)
print("loss", step.summary(r)[0], flush=True)
'''


LARGE = "benchmark at B 8 and 16, float32"
# GPT-2 124M's shape at B 8 (float32) under a device budget below its
# unplanned peak (13,745,692,160 bytes predicted, 2026-11-27; the planner
# then checkpoints 6 units, recomputing 16.7%, or with host offload 5
# units, 13.9%, and one 384 MiB buffer each way).
BUDGET = 10 << 30
BUDGET_KEEP = ("B 8 under a 10 GiB device budget, checkpoints, against "
               "torch.utils.checkpoint")
BUDGET_OFFLOAD = ("B 8 under a 10 GiB device budget, checkpoints and host "
                  "offload, against torch.utils.checkpoint")
ATTENTION = ("benchmark at B 8, attention over tiles of 128 queries and "
             "keys, float32")
ATTENTION_WHOLE = ("benchmark at B 8, attention as one tile of 1024 queries "
                   "and keys (no scores kept for the backward pass), float32")


def write_report(c, args, facts, check, bench, graph, bf16, profile, large,
                 attention, budget):
    now = datetime.datetime.now(datetime.timezone.utc)
    device = "?"
    if facts:
        lines = [x for x in facts.splitlines() if x and "name" not in x]
        device = lines[0] if lines else device
    with open(os.path.join(c.out, "campaign.md"), "w") as f:
        f.write(f"# ga-opt GPU campaign, {now:%Y-%m-%d %H:%M} UTC\n\n"
                f"Device: {device}. Command: `python3 build/device/"
                f"gpu_campaign.py run --out $OUT --deadline "
                f"{args.deadline}` (prepared by `python3 "
                f"scripts/gpu_campaign.py prepare`).\n\n")
        f.write("| stage | status | seconds |\n|---|---|---|\n")
        for name, status, seconds in c.rows:
            f.write(f"| {name} | {status} | {seconds:.0f} |\n")
        for title, text, start in (
                ("Steps against the CPU", check, None),
                ("Benchmark, float32", bench, "ga-opt CUDA benchmark"),
                ("Benchmark, CUDA graphs", graph, "ga-opt CUDA benchmark"),
                ("Benchmark, bf16", bf16, "ga-opt CUDA benchmark"),
                ("Kernel profile of the 124M step", profile, None),
                ("Benchmark at B 8 and 16, float32", large,
                 "ga-opt CUDA benchmark"),
                ("Device budget: checkpoints, host offload, "
                 "torch.utils.checkpoint", budget, None),
                ("Benchmark at B 8, attention over query and key tiles",
                 attention,
                 "ga-opt CUDA benchmark")):
            if not text:
                continue
            body = section(text, start) if start else text
            f.write(f"\n## {title}\n\n```\n{body.strip()[-6000:]}\n```\n")
    print(f"gpu_campaign: {len(c.rows)} stages, {c.failed} failed; report "
          f"{os.path.join(c.out, 'campaign.md')}")


BEGIN, END = "<!-- gpu-bench:begin -->", "<!-- gpu-bench:end -->"
ROW = re.compile(r"^(\w+)\s+([\d,]+)\s+([\d.]+)\s+([\d.]+)\s+([\d.]+)\s+"
                 r"([\d.]+)\s+(\d+)\s+(\S+)\s+(\S+)\s+(\S+)\s+([\d.]+)$")
COMPILED = re.compile(r"^\s+torch\.compile: ([\d.]+) ms, .* ([\d.]+)"
                      r"(?:; MFU (\S+))?$")
MEMORY = re.compile(r"^\s+memory: ga-opt ([\d.]+) MiB .* eager ([\d.]+) "
                    r"MiB, ratio [\d.]+; MFU: ga-opt (\S+), eager (\S+) ")


def bench_table(folder):
    """The float32 benchmark of the campaign whose campaign.md and
    campaign.log are in `folder`, as the markdown table of docs/cuda.md."""
    texts = []
    for name in ("campaign.md", "campaign.log"):
        path = os.path.join(folder, name)
        if not os.path.isfile(path):
            sys.exit(f"gpu_campaign: {folder} is not a campaign's report "
                     f"folder: no {name} (run writes it under --out)")
        with open(path) as f:
            texts.append(f.read())
    report, log = texts
    when = re.search(r"^# ga-opt GPU campaign, (.*)$", report, re.M)
    device = re.search(r"^Device: ([^,.]+)", report, re.M)
    bench = section(log, "== benchmark, float32", "\n== ")
    if not (when and device and bench):
        sys.exit(f"gpu_campaign: {folder} has no float32 benchmark (its "
                 "campaign.md and campaign.log)")
    # The larger batches' stage, where the campaign ran it.
    bench += section(log, f"== {LARGE}", "\n== ") or ""
    rows = []
    for line in bench.splitlines():
        m = ROW.match(line)
        if m:
            rows.append({"model": m.group(1), "size": m.group(2),
                         "host": m.group(3), "device": m.group(4),
                         "eager": m.group(5), "ratio": m.group(6),
                         "grad": m.group(10), "compile": "", "cratio": "",
                         "cmfu": ""})
        m = COMPILED.match(line)
        if m and rows:
            rows[-1].update(compile=m.group(1), cratio=m.group(2),
                            cmfu=m.group(3) or "")
        m = MEMORY.match(line)
        if m and rows:
            rows[-1].update(gapeak=m.group(1), tpeak=m.group(2),
                            gamfu=m.group(3), tmfu=m.group(4))
    if not rows:
        sys.exit(f"gpu_campaign: no benchmark rows in {folder}/campaign.log")
    # Peaks and MFU: in the reports of campaigns that measured them.
    memory = any("gapeak" in r for r in rows)
    header = ("| model | B,S,V,D,H,F,L | ga-opt host ms | ga-opt device ms | "
              "eager ms | ratio | torch.compile ms | ratio | worst gradient "
              "vs eager |")
    if memory:
        header += (" ga-opt peak MiB | eager peak MiB | MFU ga-opt | MFU "
                   "eager | MFU torch.compile |")
    lines = [f"{device.group(1)}, {when.group(1)} (`gpu_campaign.py run`; "
             f"the report: `{os.path.relpath(folder, os.path.dirname(HERE))}`"
             "):", "", header, "|---" * header.count(" |") + "|"]
    for r in rows:
        line = (f"| {r['model']} | {r['size']} | {r['host']} | "
                f"{r['device']} | {r['eager']} | {r['ratio']} | "
                f"{r['compile']} | {r['cratio']} | {r['grad']} |")
        if memory:
            line += (f" {r.get('gapeak', '')} | {r.get('tpeak', '')} | "
                     f"{r.get('gamfu', '')} | {r.get('tmfu', '')} | "
                     f"{r['cmfu']} |")
        lines.append(line)
    return "\n".join(lines) + "\n"


def table(args):
    """Prints the table, or writes it into (--write) or compares it with
    (--check) a document between its markers."""
    text = bench_table(args.folder)
    if not (args.write or args.check):
        print(text, end="")
        return 0
    path = args.write or args.check
    with open(path) as f:
        doc = f.read()
    if doc.count(BEGIN) != 1 or doc.count(END) != 1 or \
            doc.index(BEGIN) > doc.index(END):
        sys.exit(f"gpu_campaign: {path} needs one {BEGIN} before one {END}")
    head, rest = doc.split(BEGIN)
    old, tail = rest.split(END)
    new = head + BEGIN + "\n" + text + END + tail
    if args.check:
        if old.strip() != text.strip():
            print(f"gpu_campaign: the table in {path} is not the report's; "
                  f"run gpu_campaign.py table {args.folder} --write {path}")
            return 1
        print(f"gpu_campaign: the table in {path} is the report's")
        return 0
    with open(path, "w") as f:
        f.write(new)
    print(f"gpu_campaign: wrote the table into {path}")
    return 0


def main():
    parser = argparse.ArgumentParser(
        description=__doc__.split("\n")[0],
        formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--build", default=os.path.join(os.path.dirname(HERE),
                                                   "build"))
    p.add_argument("--out", default=None)
    p.add_argument("--chip", default="sm_90")
    r = sub.add_parser("run")
    r.add_argument("--out", required=True)
    r.add_argument("--only", default="",
                   help="the stages to run (default: all)")
    r.add_argument("--deadline", type=float, default=480,
                   help="seconds for the whole run; a stage that would "
                        "outlast it is stopped and reported")
    t = sub.add_parser("table")
    t.add_argument("folder", help="a campaign's report folder "
                   "(campaign.md and campaign.log)")
    mode = t.add_mutually_exclusive_group()
    mode.add_argument("--write", metavar="DOC")
    mode.add_argument("--check", metavar="DOC")
    args = parser.parse_args()
    if args.command == "table":
        return table(args)
    if args.command == "prepare":
        args.out = args.out or os.path.join(args.build, "device")
        prepare(args)
        return 0
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
