#!/usr/bin/python3
"""A model of real size through ga-import, timed stage by stage.

transformers' GPT2LMHeadModel at GPT-2 124M's shape (12 layers, D 768, 12
heads, V 50257, positions 1024), random weights from a seed, one batch of
B sequences of S tokens (default 1 x 128): imported with ga-import (the
labels shifted by one, as transformers' loss), compiled ahead of time with
ga-compile for the CPU (and with --cuda for CUDA), run by ga-exec, and
compared with PyTorch's float64 autograd on the same weights and batch:
the loss and every gradient within a relative 1e-5 (gradients relative to
the larger of their norm and 1e-4 of the norm of all gradients).

Prints the time of every stage (export and import, each compile with
ga-compile's own stage times, the step, the reference) and the library's
size; exits non-zero when a check fails.

  PY=$(scripts/setup_frontend.sh --locate)
  $PY scripts/import_real_size.py --build build --workdir /tmp/real \
      [--cuda [--cuda-stand-in build/test/cuda-mock]]
"""

import argparse
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def model_and_batch(layers, batch, seq):
    os.environ["HF_HUB_OFFLINE"] = "1"
    import torch
    from transformers import GPT2Config, GPT2LMHeadModel
    torch.manual_seed(0)
    gen = torch.Generator().manual_seed(0)
    config = GPT2Config(vocab_size=50257, n_positions=1024, n_embd=768,
                        n_layer=layers, n_head=12,
                        attn_implementation="eager", bos_token_id=0,
                        eos_token_id=0)
    model = GPT2LMHeadModel(config).eval()
    ids = torch.randint(0, 50257, (batch, seq), generator=gen)
    labels = torch.randint(0, 50257, (batch, seq), generator=gen)
    labels[torch.rand(batch, seq, generator=gen) < 0.1] = -100
    return model, {"input_ids": ids,
                   "attention_mask": torch.ones(batch, seq,
                                                dtype=torch.int64),
                   "labels": labels}


def reference(model, batch, names):
    """PyTorch's float64 loss and gradients (in `names` order), and the
    seconds it took."""
    import torch
    import torch.nn.functional as F
    start = time.time()
    m64 = {k: v.detach().double().requires_grad_(True)
           for k, v in model.named_parameters()}
    model.double()
    inputs = {k: v for k, v in batch.items() if k != "labels"}
    logits = torch.func.functional_call(model, m64, (), inputs).logits
    model.float()
    loss = F.cross_entropy(logits[:, :-1].reshape(-1, logits.shape[-1]),
                           batch["labels"][:, 1:].reshape(-1),
                           ignore_index=-100)
    grads = torch.autograd.grad(loss, [m64[n] for n in names])
    return (float(loss.detach()), [g.numpy() for g in grads],
            time.time() - start)


def main():
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    parser.add_argument("--build", default=os.path.join(HERE, "..", "build"))
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--layers", type=int, default=12)
    parser.add_argument("--batch", type=int, default=1)
    parser.add_argument("--seq", type=int, default=128)
    parser.add_argument("--cuda", action="store_true",
                        help="also compile for CUDA (nothing runs on a GPU)")
    parser.add_argument("--cuda-stand-in", metavar="DIR",
                        help="with --cuda: run the CUDA step once against "
                        "the driver stand-in built in DIR (test/cuda-mock "
                        "of the build: libcuda.so.1), compiled without "
                        "the label and assert checks, which read values "
                        "the stand-in does not compute; every launch must "
                        "name a kernel its module defines")
    args = parser.parse_args()
    import numpy as np
    import ga_scripts  # noqa: F401  (the checkout's python/ on the path)
    import ga_import
    tool = lambda name: os.path.join(args.build, "bin", name)  # noqa: E731
    os.makedirs(args.workdir, exist_ok=True)
    failures = 0

    def check(what, ok):
        nonlocal failures
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} real-size: {what}", flush=True)

    model, batch = model_and_batch(args.layers, args.batch, args.seq)
    start = time.time()
    # check=False: this script runs the same comparison with float64
    # autograd itself, on the step that ga-compile builds (the import's
    # check would run the 124M-parameter step once more through ga-run).
    step = ga_import.import_step(model, batch, ga_opt=tool("ga-opt"),
                                 shift_labels=True, check=False)
    print(f"real-size: GPT-2 {args.layers} layers, "
          f"{sum(p.numel() for p in step.params) / 1e6:.1f}M parameters, "
          f"B {args.batch} x S {args.seq}: imported in "
          f"{time.time() - start:.1f} s ({step.mlir.count(chr(10))} lines)",
          flush=True)
    src = os.path.join(args.workdir, "step.mlir")
    with open(src, "w") as f:
        f.write(step.mlir)

    def compile_for(target, options=""):
        lib = os.path.join(args.workdir, f"libstep-{target}.so")
        start = time.time()
        done = subprocess.run([tool("ga-compile"), src, "-o", lib,
                               f"--target={target}",
                               f"--pipeline-options={options}"],
                              capture_output=True, text=True)
        seconds = time.time() - start
        out = done.stdout + done.stderr
        stages = re.search(r"compile_ms: .*", out)
        kernels = re.search(r"kernels: (\d+) GPU module", out)
        check(f"ga-compile --target={target} in {seconds:.1f} s "
              f"({stages.group(0) if stages else out[-2000:]}), "
              f"{os.path.getsize(lib) if done.returncode == 0 else 0} bytes"
              + (f", {kernels.group(1)} GPU modules" if kernels else ""),
              done.returncode == 0)
        return lib if done.returncode == 0 else None

    lib = compile_for("cpu")
    cuda_lib = None
    if args.cuda:
        cuda_lib = compile_for(
            "cuda", "check-labels=false check-asserts=false"
            if args.cuda_stand_in else "")
    if lib is None:
        sys.exit(1)
    paths = []
    for i, t in enumerate(step.arguments()):
        paths.append(os.path.join(args.workdir, f"arg{i}.npy"))
        np.save(paths[-1], t.numpy())
    if cuda_lib and args.cuda_stand_in:
        stand_in = os.path.join(args.cuda_stand_in, "libcuda.so.1")
        log = os.path.join(args.workdir, "stand-in.log")
        env = dict(os.environ, GA_CUBLAS_LIBRARY=stand_in,
                   GA_MOCK_CUDA_LOG=log,
                   LD_LIBRARY_PATH=args.cuda_stand_in)
        done = subprocess.run([tool("ga-exec"), cuda_lib, *paths],
                              capture_output=True, text=True, env=env)
        counts = {}
        if os.path.exists(log):
            for line in open(log):
                key, _, value = line.partition(":")
                counts[key.strip()] = value.strip()
        ok = (done.returncode == 0 and counts.get("bad launches") == "0"
              and counts.get("missing functions") == "0"
              and counts.get("bad gemms") == "0")
        check(f"the CUDA step against the driver stand-in: "
              f"{counts.get('launches')} launches of kernels in "
              f"{counts.get('modules')} modules, {counts.get('gemms')} "
              f"GEMMs, bad launches {counts.get('bad launches')}, missing "
              f"functions {counts.get('missing functions')}, peak device "
              f"bytes {counts.get('peak device bytes')}", ok)
        if not ok:
            print((done.stdout + done.stderr)[-3000:])
    out = os.path.join(args.workdir, "out")
    start = time.time()
    done = subprocess.run([tool("ga-exec"), lib, *paths, "--out-dir", out],
                          capture_output=True, text=True)
    check(f"ga-exec runs the CPU step ({time.time() - start:.1f} s with "
          "loading)", done.returncode == 0)
    if done.returncode:
        print(done.stdout + done.stderr)
        sys.exit(1)
    got = [np.load(os.path.join(out, f"result{i}.npy"))
           for i in range(1 + len(step.params))]
    loss64, grads64, seconds = reference(model, batch, step.param_names)
    print(f"real-size: PyTorch float64 reference in {seconds:.1f} s")
    err = abs(float(got[0]) - loss64) / abs(loss64)
    check(f"loss {float(got[0]):.7f} against float64 {loss64:.7f}: relative "
          f"error {err:.2e} (tolerance 1e-5)", err <= 1e-5)
    floor = 1e-4 * np.sqrt(sum(np.sum(g ** 2) for g in grads64))
    errors = [np.linalg.norm(g - g64) / max(np.linalg.norm(g64), floor)
              for g, g64 in zip(got[1:], grads64)]
    worst = int(np.argmax(errors))
    check(f"{len(errors)} gradients, the worst ({step.param_names[worst]}) "
          f"within {errors[worst]:.2e} (tolerance 1e-5)",
          errors[worst] <= 1e-5)
    print(f"real-size: {'FAILED' if failures else 'passed'}")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
