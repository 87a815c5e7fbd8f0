"""Steps that ga-import wrote, without ga-legalize-import (Inputs/export-*),
through --ga-pipeline (which runs it first) with no PyTorch at hand: the
full batch, k = 2 micro-batches (bit for bit the same loss and gradients)
and the naive k = 2 split (off by more than 1e-6).

Arguments from a seed: parameters normal * 0.05; of the integer batch
operands, the first holds token ids in [0, 256), the last the labels (a
quarter -100, the second row all -100), any between them ones (an
attention mask).

  exported_steps.py --ga-opt BIN --ga-run BIN --workdir DIR FILE.mlir...
"""

import argparse
import os
import re
import subprocess
import sys

import numpy as np


def arguments(text, rng):
    sig = re.search(r"func\.func @step\((.*?)\) ->", text).group(1)
    types = re.findall(r"tensor<([0-9x]*)x?(f32|i64)>", sig)
    ints = [i for i, (_, t) in enumerate(types) if t == "i64"]
    args = []
    for i, (dims, dtype) in enumerate(types):
        shape = [int(d) for d in dims.split("x") if d]
        if dtype == "f32":
            args.append((0.05 * rng.standard_normal(shape)).astype(np.float32))
        elif i == ints[-1]:
            labels = rng.integers(0, 256, shape)
            labels[rng.random(shape) < 0.25] = -100
            labels[1] = -100
            args.append(labels.astype(np.int64))
        elif i == ints[0]:
            args.append(rng.integers(0, 256, shape).astype(np.int64))
        else:
            args.append(np.ones(shape, np.int64))
    return args


def with_schedule(text, k):
    """The step with microbatches = k (ga-import elides k = 1)."""
    new, count = re.subn(r"(train\.step params\(.*?\) batch\(.*?\)) ->",
                         rf"\1 attributes {{microbatches = {k} : i64}} ->",
                         text, count=1)
    assert count == 1
    return new


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ga-opt", required=True)
    parser.add_argument("--ga-run", required=True)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("files", nargs="+")
    args = parser.parse_args()
    failures = checks = 0

    def check(what, ok, detail=""):
        nonlocal failures, checks
        checks += 1
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} exported: {what}"
              + ("" if ok else f": {detail}"), flush=True)

    for path in args.files:
        name = os.path.basename(path).removesuffix(".mlir")
        work = os.path.join(args.workdir, name)
        os.makedirs(work, exist_ok=True)
        text = open(path).read()
        paths = []
        for i, a in enumerate(arguments(text, np.random.default_rng(0))):
            paths.append(os.path.join(work, f"arg{i}.npy"))
            np.save(paths[-1], a)
        results = {}
        for tag, k, naive in (("k1", 1, False), ("k2", 2, False),
                              ("naive-k2", 2, True)):
            src = os.path.join(work, f"{tag}.mlir")
            with open(src, "w") as f:
                f.write(with_schedule(text, k) if k > 1 else text)
            low = os.path.join(work, f"{tag}.lowered.mlir")
            pipeline = "--ga-pipeline=target=cpu" + (" naive=true" if naive
                                                     else "")
            done = subprocess.run([args.ga_opt, src, pipeline, "-o", low],
                                  capture_output=True, text=True)
            if done.returncode == 0:
                out = os.path.join(work, f"{tag}.out")
                done = subprocess.run([args.ga_run, low, *paths, "--out-dir",
                                       out], capture_output=True, text=True)
            check(f"{name}: {tag} compiles and runs", done.returncode == 0,
                  done.stderr[-3000:])
            if done.returncode == 0:
                count = int(re.search(r"wrote (\d+) result",
                                      done.stdout).group(1))
                results[tag] = [np.load(os.path.join(out, f"result{i}.npy"))
                                for i in range(count)]
        if len(results) < 3:
            continue
        full = results["k1"]
        check(f"{name}: loss {float(full[0]):.6f} is finite",
              np.isfinite(full[0]))
        check(f"{name}: k = 2 bitwise the full batch",
              all(np.array_equal(a, b) for a, b in zip(results["k2"], full)))
        off = max(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-30)
                  for a, b in zip(results["naive-k2"], full))
        check(f"{name}: the naive k = 2 split is off by {off:.2e} (more "
              "than 1e-6)", off > 1e-6)
    print(f"exported: {checks - failures} of {checks} checks passed")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
