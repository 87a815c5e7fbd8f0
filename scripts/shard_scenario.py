#!/usr/bin/python3
"""What fits: the sharding stage, micro-batch count and checkpoints that the
planner chooses for a model shape on R data-parallel ranks of a given
device memory, with each rank's predicted peak.

  python3 scripts/shard_scenario.py --model llama-7b [--ranks 8]
      [--device-gib 80] [--batch-per-rank 8] [--seq S] [--stages 0,1,2,3]
      [--all-stages] [--build build] [--workdir DIR]

Models (examples/gen_tiny_gpt.py --train: GPT-2 blocks, the gradients
clipped to a global norm, AdamW; float32 parameters, gradients and moments):

  tiny-gpt   L 2, D 64, H 4, F 256, V 256, S 64 (for tests)
  gpt2-355m  L 24, D 1024, H 16, F 4096, V 50304, S 1024 (GPT-2 medium)
  llama-1b   L 22, D 2048, H 32, F 8448, V 32000, S 2048 (TinyLlama 1.1B)
  llama-7b   L 32, D 4096, H 32, F 16512, V 32000, S 2048 (Llama 2 7B)

The Llama shapes are GPT-2 blocks of Llama's width, depth, heads and
vocabulary (separate embedding and head, as Llama's), with an MLP of
3F/2 (F: Llama's SwiGLU width) so that its two matrices hold SwiGLU's three
matrices' parameters: the parameter count is Llama's within 1% (no RMSNorm,
rotary positions or grouped-query keys: the generator writes GPT-2's).

For each stage (0: replicated; 1: AdamW's moments sharded; 2: also the
gradients; 3: also the parameters, gathered before each operation that
reads them), lowest first (the least communication), the step for R ranks
at a global batch of R * batch-per-rank sequences is compiled for CUDA up
to its buffers with `memory-budget=<device bytes> choose-microbatches=true`
(`ga-opt --ga-pipeline`, target=cuda buffers-only=true): train-plan-remat
measures each candidate's device peak on the rank's compiled step (the
parameters, moments and gradients it holds at that stage, the activations,
cuBLAS's workspace, the caching allocator's blocks) and chooses k and the
checkpoints for the least estimated time within the budget, or says the
smallest peak it reaches. A stage whose state (the parameters and moments
on the rank, and the gradients it accumulates: whole at stages 0 and 1, at
least the rank's shards from stage 2 on) exceeds the device is reported
without compiling.

Prints one line per stage and the choice: the lowest stage that fits. The
predicted peak is the planner's; test/Integration/sharded-budget.test
checks on the CPU, under mpirun, that the peak a rank measures is the
predicted one to the byte (at every stage), and scripts/device_scenario.py
does the same for one device against the driver stand-in. Not a test: each
stage compiles the step several times (minutes at these sizes).
"""

import argparse
import math
import os
import re
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

MODELS = {
    # name: (layers, dim, heads, ffn, vocab, seq)
    "tiny-gpt": (2, 64, 4, 256, 256, 64),
    "gpt2-355m": (24, 1024, 16, 4096, 50304, 1024),
    "llama-1b": (22, 2048, 32, 5632 * 3 // 2, 32000, 2048),
    "llama-7b": (32, 4096, 32, 11008 * 3 // 2, 32000, 2048),
}

GIB = 2 ** 30


def size(n):
    """n bytes in GiB, or MiB below one GiB."""
    return f"{n / GIB:.2f} GiB" if n >= GIB else f"{n / 2 ** 20:.2f} MiB"


def generate(path, model, batch, seq):
    layers, dim, heads, ffn, vocab, _ = MODELS[model]
    text = subprocess.run(
        [sys.executable, os.path.join(ROOT, "examples", "gen_tiny_gpt.py"),
         "--train", "--batch", str(batch), "--seq", str(seq), "--vocab",
         str(vocab), "--dim", str(dim), "--heads", str(heads), "--ffn",
         str(ffn), "--layers", str(layers)],
        capture_output=True, text=True, check=True).stdout
    with open(path, "w") as f:
        f.write(text)
    return text


def state_sizes(text):
    """{argument name: elements} of the parameters and moments of the
    generated step's signature."""
    signature = text[text.index("func.func @"):text.index("\n", text.index(
        "func.func @"))]
    sizes = {}
    for name, dims in re.findall(r"%(\w+): tensor<([0-9x]+)xf32>", signature):
        sizes[name] = math.prod(int(d) for d in dims.split("x"))
    return sizes


def rank_state_bytes(sizes, ranks, stage):
    """(parameters, moments) bytes that a rank holds between steps."""
    def held(n, sharded):
        return 4 * (-(-n // ranks) if sharded else n)
    params = sum(held(n, stage >= 3) for name, n in sizes.items()
                 if not name.startswith(("m_", "v_")))
    moments = sum(held(n, stage >= 1) for name, n in sizes.items()
                  if name.startswith(("m_", "v_")))
    return params, moments


def plan(args, step, ranks, stage, budget):
    """(k, checkpoints, recomputed %, planned peak) or (None, smallest)."""
    options = (f"target=cuda buffers-only=true check-labels=false "
               f"data-parallel={ranks} shard={stage} memory-budget={budget} "
               f"choose-microbatches=true")
    done = subprocess.run(
        [os.path.join(args.build, "bin", "ga-opt"), step,
         f"--ga-pipeline={options}", "-o", os.devnull],
        capture_output=True, text=True)
    remark = re.search(
        r"microbatches (\d+) chosen of .*?; (\d+) checkpoints over (\d+) "
        r"units \(recomputed ([\d.]+)% of the forward work\); planned peak "
        r"(\d+) bytes", done.stderr)
    if done.returncode == 0 and remark:
        return {"k": int(remark.group(1)), "checkpoints": int(remark.group(2)),
                "units": int(remark.group(3)),
                "recomputed": float(remark.group(4)),
                "peak": int(remark.group(5))}
    smallest = re.search(r"the smallest peak the planner reaches is (\d+) "
                         r"bytes", done.stderr)
    if smallest:
        return {"smallest": int(smallest.group(1))}
    sys.exit(f"shard_scenario: ga-opt failed on stage {stage}:\n"
             f"{done.stderr[-3000:]}")


def main():
    p = argparse.ArgumentParser(
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--model", choices=sorted(MODELS), default="llama-7b")
    p.add_argument("--ranks", type=int, default=8)
    p.add_argument("--device-gib", type=float, default=80.0)
    p.add_argument("--device-bytes", type=int, default=0,
                   help="the device memory in bytes (instead of "
                        "--device-gib)")
    p.add_argument("--batch-per-rank", type=int, default=8,
                   help="sequences per rank and step (the planner's k "
                        "divides it)")
    p.add_argument("--seq", type=int, default=0,
                   help="tokens per sequence (0: the model's)")
    p.add_argument("--stages", default="0,1,2,3")
    p.add_argument("--all-stages", action="store_true",
                   help="plan every stage, not only up to the first that "
                        "fits")
    p.add_argument("--build", default=os.path.join(ROOT, "build"))
    p.add_argument("--workdir", default=None)
    args = p.parse_args()
    if args.ranks < 1 or args.batch_per_rank < 1 or args.device_gib <= 0 \
            or args.device_bytes < 0:
        p.error("--ranks, --batch-per-rank and the device memory must be "
                "positive")
    stages = [int(s) for s in args.stages.split(",")]
    if any(s not in (0, 1, 2, 3) for s in stages):
        p.error(f"--stages: stages are 0 to 3, got {args.stages}")
    work = args.workdir or tempfile.mkdtemp(prefix="ga-shard-scenario-")
    os.makedirs(work, exist_ok=True)
    seq = args.seq or MODELS[args.model][5]
    batch = args.ranks * args.batch_per_rank
    budget = args.device_bytes or int(args.device_gib * GIB)
    step = os.path.join(work, f"{args.model}.mlir")
    text = generate(step, args.model, batch, seq)
    sizes = state_sizes(text)
    count = sum(n for name, n in sizes.items()
                if not name.startswith(("m_", "v_")))
    grads = 4 * count
    layers, dim, heads, ffn, vocab, _ = MODELS[args.model]
    print(f"shard_scenario: {args.model} ({count:,} parameters: "
          f"L {layers}, D {dim}, H {heads}, F {ffn}, V {vocab}, S {seq}), "
          f"AdamW in float32, {args.ranks} rank(s) of {budget} bytes, "
          f"{args.batch_per_rank} sequence(s) per rank", flush=True)
    chosen = None
    for stage in sorted(stages):
        params, moments = rank_state_bytes(sizes, args.ranks, stage)
        head = (f"stage {stage}: a rank holds parameters "
                f"{size(params)}, moments {size(moments)}")
        # Stages 0 and 1 accumulate every gradient whole; from stage 2 on a
        # rank accumulates at least its shards (train-shard-accumulators
        # makes the micro-batch loop's accumulators shards where that
        # saves memory, else they stay whole): with the state, a lower
        # bound of the peak that needs no compile.
        held = grads if stage < 2 else -(-grads // args.ranks)
        if params + moments + held > budget:
            what = "whole gradients" if stage < 2 else "gradients' shards"
            print(f"{head}; does not fit: with the {what} "
                  f"({size(held)}) they exceed the device",
                  flush=True)
            continue
        start = time.time()
        result = plan(args, step, args.ranks, stage, budget)
        took = time.time() - start
        if "smallest" in result:
            print(f"{head}; does not fit: the smallest peak the planner "
                  f"reaches is {size(result['smallest'])} "
                  f"(planned in {took:.0f} s)", flush=True)
            continue
        print(f"{head}; fits: k = {result['k']} micro-batch(es) of "
              f"{args.batch_per_rank // result['k']} sequence(s), "
              f"{result['checkpoints']} checkpoint(s) over {result['units']} "
              f"unit(s), recomputed {result['recomputed']:.1f}% of the "
              f"forward work, predicted peak {size(result['peak'])} "
              f"({result['peak']} bytes; planned in {took:.0f} s)",
              flush=True)
        if chosen is None:
            chosen = (stage, result)
            if not args.all_stages:
                break
    if chosen is None:
        print("choice: none of the stages fits; more ranks, fewer sequences "
              "per rank or a shorter sequence")
        return 1
    stage, result = chosen
    print(f"choice: stage {stage}, k = {result['k']}, "
          f"{result['checkpoints']} checkpoint(s), predicted peak per rank "
          f"{size(result['peak'])} ({result['peak']} bytes) of "
          f"{budget} bytes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
