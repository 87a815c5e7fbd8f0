"""PyTorch models through ga-import, against PyTorch's float64 autograd.

For each model (built from a seed, random weights; nothing downloaded):
the model is imported with ga-import (torch-mlir's FX importer, linalg on
tensors, F.cross_entropy as train.cross_entropy), compiled with the
default CPU pipeline and run by ga-run on the example batch. The loss and
every gradient must be within a relative 1e-5 (tensor norm) of the same
model's float64 loss and autograd gradients on the same weights and batch
(float32 sums of at most 2,048 terms: relative errors near 1e-7, measured
below 1e-6). The batch has padding (-100 labels, one example all padding).

  import_models.py --ga-opt BIN --ga-run BIN --python DIR --workdir DIR
                   [--models mlp,...]
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np
import torch
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))


class MLP(torch.nn.Module):
    """The sizes of examples/mlp.mlir: D 32, hidden 64, V 64."""

    def __init__(self):
        super().__init__()
        self.fc1 = torch.nn.Linear(32, 64)
        self.fc2 = torch.nn.Linear(64, 64, bias=False)

    def forward(self, x):
        return self.fc2(torch.relu(self.fc1(x)))


def mlp_batch(gen):
    x = torch.randn(8, 16, 32, generator=gen)
    labels = torch.randint(0, 64, (8, 16), generator=gen)
    labels[torch.rand(8, 16, generator=gen) < 0.25] = -100
    labels[5] = -100
    return {"x": x, "labels": labels}


MODELS = {"mlp": (MLP, mlp_batch)}


def reference(model, batch, names):
    """The float64 loss and gradients (in `names` order)."""
    m64 = {k: v.detach().double().requires_grad_(True)
           for k, v in model.named_parameters()}
    inputs = {k: (v.double() if v.is_floating_point() else v)
              for k, v in batch.items() if k != "labels"}
    logits = torch.func.functional_call(model.double(), m64, (), inputs)
    model.float()
    loss = F.cross_entropy(logits.reshape(-1, logits.shape[-1]),
                           batch["labels"].reshape(-1), ignore_index=-100)
    grads = torch.autograd.grad(loss, [m64[n] for n in names])
    return float(loss.detach()), [g.numpy() for g in grads]


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    for flag in ("--ga-opt", "--ga-run", "--python", "--workdir"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--models", default=",".join(MODELS))
    args = parser.parse_args()
    sys.path.insert(0, args.python)
    import ga_import

    failures = checks = 0

    def check(what, ok, detail=""):
        nonlocal failures, checks
        checks += 1
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} import: {what}"
              + ("" if ok else f": {detail}"))

    for name in args.models.split(","):
        make, make_batch = MODELS[name]
        gen = torch.Generator().manual_seed(0)
        torch.manual_seed(0)
        model = make()
        batch = make_batch(gen)
        work = os.path.join(args.workdir, name)
        os.makedirs(work, exist_ok=True)
        step = ga_import.import_step(model, batch, ga_opt=args.ga_opt)
        src = os.path.join(work, "step.mlir")
        with open(src, "w") as f:
            f.write(step.mlir)
        check(f"{name}: imported as one train.step",
              step.mlir.count("train.step") == 1, step.mlir[:2000])
        lowered = os.path.join(work, "lowered.mlir")
        done = subprocess.run([args.ga_opt, src, "--ga-pipeline=target=cpu",
                               "-o", lowered], capture_output=True,
                              text=True)
        check(f"{name}: compiles", done.returncode == 0, done.stderr[-3000:])
        if done.returncode:
            continue
        paths = []
        for i, t in enumerate(step.arguments()):
            paths.append(os.path.join(work, f"arg{i}.npy"))
            np.save(paths[-1], t.numpy())
        out = os.path.join(work, "out")
        done = subprocess.run([args.ga_run, lowered, *paths, "--out-dir",
                               out], capture_output=True, text=True)
        check(f"{name}: runs", done.returncode == 0, done.stderr[-3000:])
        if done.returncode:
            continue
        count = int(re.search(r"wrote (\d+) result", done.stdout).group(1))
        got = [np.load(os.path.join(out, f"result{i}.npy"))
               for i in range(count)]
        loss64, grads64 = reference(model, batch, step.param_names)
        err = abs(float(got[0]) - loss64) / abs(loss64)
        check(f"{name}: loss {float(got[0]):.7f} against float64 "
              f"{loss64:.7f}: relative error {err:.2e} (tolerance 1e-5)",
              err <= 1e-5)
        for pname, g, g64 in zip(step.param_names, got[1:], grads64):
            err = np.linalg.norm(g - g64) / max(np.linalg.norm(g64), 1e-30)
            check(f"{name}: gradient of {pname}: relative error {err:.2e} "
                  "(tolerance 1e-5)", err <= 1e-5 and g.shape == g64.shape,
                  f"shape {g.shape}, expected {g64.shape}")
    print(f"import: {checks - failures} of {checks} checks passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
