"""The corpus: every example and lit input that runs, compared across
configurations."""

import os
import re
import shutil
import subprocess

import numpy as np

from .runner import BITWISE_PAIRS, bitwise_mismatch


# The corpus: every example and lit input that runs.

CORPUS_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
                 "i64": np.int64, "i1": np.bool_}
# Configurations compared with `cpu` beyond the bitwise pairs: the same
# float32 terms summed in another order or contracted into fused
# multiply-adds, relative to the largest magnitude of the result.
CORPUS_RTOL = 1e-4


def corpus_chunks(paths):
    """(name, text) of every chunk (split at `// -----`) of every .mlir
    file under `paths`."""
    files = []
    for path in paths:
        if os.path.isdir(path):
            for d, _, names in sorted(os.walk(path)):
                files += [os.path.join(d, n) for n in sorted(names)
                          if n.endswith(".mlir")]
        else:
            files.append(path)
    for f in files:
        with open(f) as h:
            text = h.read()
        for i, chunk in enumerate(re.split(r"^// -----\s*$", text,
                                           flags=re.M)):
            yield f"{f}#{i}", chunk


def corpus_entries(runner, text, work):
    """[(entry, [(shape, dtype)])] of the public functions of `text` with
    static tensor arguments of a type the runners take."""
    os.makedirs(work, exist_ok=True)
    src = os.path.join(work, "chunk.mlir")
    with open(src, "w") as f:
        f.write(text)
    done = subprocess.run([runner.tool("ga-opt"), src,
                           "--mlir-print-op-generic"], capture_output=True,
                          text=True)
    if done.returncode:
        return []
    entries = []
    for m in re.finditer(r'"func\.func"\(\) <\{(.*?)\}> \(\{', done.stdout):
        attrs = m.group(1)
        name = re.search(r'sym_name = "([^"]+)"', attrs)
        ftype = re.search(r"function_type = \((.*?)\) ->", attrs)
        if not name or not ftype or "sym_visibility" in attrs:
            continue
        args = []
        for t in re.split(r",\s*(?=tensor<)", ftype.group(1).strip()):
            tm = re.fullmatch(r"tensor<((?:\d+x)*)(f32|f64|i32|i64|i1)>",
                              t.strip())
            if not tm:
                args = None
                break
            dims = tuple(int(d) for d in tm.group(1).split("x") if d)
            args.append((dims, tm.group(2)))
        if args is not None:
            entries.append((name.group(1), args))
    return entries


def corpus_inputs(rng, args, text=""):
    """Random arguments of a corpus function. A file that says
    `// difftest-floats: normal STDDEV` (a model's step, which positive
    weights in [0.05, 1] make ill-conditioned) gets its floats from a
    normal distribution of that deviation instead."""
    normal = re.search(r"^// difftest-floats: normal ([0-9.eE+-]+)$", text,
                       re.MULTILINE)
    arrays = []
    for shape, dtype in args:
        if dtype == "i1":
            arrays.append(rng.random(shape) < 0.5)
        elif dtype in ("i32", "i64"):
            # 0 and 1: valid labels, indices and counts for every model.
            arrays.append(rng.integers(0, 2, shape).astype(
                CORPUS_DTYPES[dtype]))
        elif normal:
            arrays.append((float(normal.group(1)) * rng.standard_normal(
                shape)).astype(CORPUS_DTYPES[dtype]))
        else:
            # Positive: an optimizer's second moments, a step count and a
            # learning rate are valid too.
            arrays.append(rng.uniform(0.05, 1, shape).astype(
                CORPUS_DTYPES[dtype]))
    return arrays


def check_corpus(runner, paths, configs, workdir, seed):
    """Runs every function of the corpus in `configs`. A chunk that `cpu`
    does not compile or run (an input meant to be refused, a step for
    several ranks) does not run and is counted apart; otherwise every other
    configuration must run it, the bitwise pairs must agree bit for bit and
    every configuration must be within CORPUS_RTOL of `cpu`. Returns
    (findings, ran, skipped)."""
    rng = np.random.default_rng(seed)
    findings, ran, skipped = [], 0, 0
    for i, (name, text) in enumerate(corpus_chunks(paths)):
        work = os.path.join(workdir, f"corpus{i}")
        entries = corpus_entries(runner, text, work)
        if not entries:
            skipped += 1
            shutil.rmtree(work, ignore_errors=True)
            continue
        for entry, args in entries:
            inputs = corpus_inputs(rng, args, text)
            source = text
            if len(entries) > 1:
                # One public function per run: the others made private.
                source = re.sub(r"func\.func @(?!" + re.escape(entry) +
                                r"\()", "func.func private @", text)
            results = {}
            for config in ["cpu"] + [c for c in configs if c != "cpu"]:
                got = runner.run(config, source, inputs,
                                 os.path.join(work, entry, config))
                if isinstance(got, str):
                    if config == "cpu":
                        break
                    findings.append(f"{name} @{entry}: {config}: "
                                    f"{got.splitlines()[0]}\n{got}")
                    continue
                results[config] = got
            if "cpu" not in results:
                skipped += 1
                continue
            ran += 1
            base = results["cpu"]
            for config, got in results.items():
                if len(got) != len(base):
                    findings.append(f"{name} @{entry}: {config}: "
                                    f"{len(got)} results, cpu {len(base)}")
                    continue
                for k, (a, b) in enumerate(zip(got, base)):
                    if a.dtype != b.dtype or a.shape != b.shape:
                        why = bitwise_mismatch(a, b)
                    elif a.dtype.kind == "f":
                        scale = float(np.nanmax(np.abs(b), initial=0.0))
                        diff = np.abs(a.astype(np.float64) - b)
                        bad = ~(diff <= CORPUS_RTOL * max(scale, 1e-30))
                        # NaN where cpu has NaN agrees.
                        bad &= ~(np.isnan(a) & np.isnan(b))
                        why = (f"{int(bad.sum())} element(s) off by up to "
                               f"{float(np.max(diff)):.3g} (|cpu| <= "
                               f"{scale:.3g})" if bad.any() else None)
                    else:
                        why = bitwise_mismatch(a, b)
                    if why:
                        findings.append(f"{name} @{entry}: {config} against"
                                        f" cpu: result {k}: {why}")
            for a, b in BITWISE_PAIRS:
                if a in results and b in results:
                    for k, (x, y) in enumerate(zip(results[a], results[b])):
                        why = bitwise_mismatch(x, y)
                        if why:
                            findings.append(f"{name} @{entry}: {a} against "
                                            f"{b}: result {k}: {why}")
        if not findings:
            shutil.rmtree(work, ignore_errors=True)
    return findings, ran, skipped
