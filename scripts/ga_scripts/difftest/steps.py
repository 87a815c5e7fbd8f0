"""Generated training steps: each split exact, its gradients against
finite differences, its ranks against the full batch."""

import os
import re
import shutil
import subprocess

import numpy as np

from .runner import CONFIGS, bitwise_mismatch


# Generated training steps: splits exact, gradients right.

STEP_ACTS = {
    "tanh": (np.tanh, ["%r = math.tanh %a : f32"]),
    "identity": (lambda x: x, ["%r = arith.addf %a, %czero : f32"]),
    "scale": (lambda x: 0.5 * x, ["%r = arith.mulf %a, %chalf : f32"]),
}


class StepProgram:
    """A train.step: tokens x [B, S, D] through `layers` (weight [in, out],
    optional bias [out], activation) to logits [B*S, V], mean cross-entropy
    over the labels that are not -100."""

    def __init__(self, rng):
        self.B = int(rng.choice([4, 8]))
        self.S = int(rng.integers(1, 5))
        dims = [int(rng.integers(2, 9)) for _ in range(int(rng.integers(1, 3)))]
        self.V = int(rng.integers(2, 8))
        dims.append(self.V)
        self.layers = []
        for i in range(len(dims) - 1):
            act = "identity" if i == len(dims) - 2 else \
                str(rng.choice(list(STEP_ACTS)))
            self.layers.append((dims[i], dims[i + 1], bool(rng.random() < 0.5),
                                act))
        self.D = dims[0]
        self.params = []
        for din, dout, bias, _ in self.layers:
            self.params.append(rng.uniform(-1, 1, (din, dout)).astype(
                np.float32))
            if bias:
                self.params.append(rng.uniform(-0.5, 0.5, dout).astype(
                    np.float32))
        self.x = rng.uniform(-1, 1, (self.B, self.S, self.D)).astype(
            np.float32)
        labels = rng.integers(0, self.V, (self.B, self.S)).astype(np.int64)
        labels[rng.random((self.B, self.S)) < 0.3] = -100
        labels[int(rng.integers(self.B))] = -100   # one example all padding
        if (labels != -100).sum() == 0:
            labels[0, 0] = 0
        self.labels = labels

    def forward(self, params):
        """The loss in float64."""
        h = self.x.reshape(-1, self.D).astype(np.float64)
        k = 0
        for din, dout, bias, act in self.layers:
            h = h @ params[k]
            k += 1
            if bias:
                h = h + params[k]
                k += 1
            h = STEP_ACTS[act][0](h)
        y = self.labels.reshape(-1)
        valid = y != -100
        m = h.max(axis=1, keepdims=True)
        lse = np.log(np.exp(h - m).sum(axis=1)) + m[:, 0]
        picked = h[np.arange(len(y)), np.where(valid, y, 0)]
        return float(((lse - picked) * valid).sum() / valid.sum())

    def gradients(self):
        """Central finite differences of the float64 forward."""
        base = [p.astype(np.float64) for p in self.params]
        grads = []
        for i, p in enumerate(base):
            g = np.zeros_like(p)
            for idx in np.ndindex(p.shape):
                h = 1e-6 * max(1.0, abs(p[idx]))
                for sign in (1, -1):
                    q = [b.copy() for b in base]
                    q[i][idx] += sign * h
                    g[idx] += sign * self.forward(q) / (2 * h)
            grads.append(g)
        return grads

    def emit(self, microbatches, data_parallel=1):
        N = self.B * self.S
        ptypes = []
        for din, dout, bias, _ in self.layers:
            ptypes.append(f"tensor<{din}x{dout}xf32>")
            if bias:
                ptypes.append(f"tensor<{dout}xf32>")
        xt = f"tensor<{self.B}x{self.S}x{self.D}xf32>"
        lt = f"tensor<{self.B}x{self.S}xi64>"
        pn = [f"%p{i}" for i in range(len(ptypes))]
        bn = [f"%b{i}" for i in range(len(ptypes))]
        lines = [f"func.func @step({', '.join(f'{n}: {t}' for n, t in zip(pn, ptypes))}, "
                 f"%x: {xt}, %y: {lt}) -> (tensor<f32>, {', '.join(ptypes)}, "
                 f"tensor<i64>) {{",
                 f"  %loss, {', '.join(f'%g{i}' for i in range(len(ptypes)))},"
                 f" %count = train.step params({', '.join(pn)} : "
                 f"{', '.join(ptypes)}) batch(%x, %y : {xt}, {lt})",
                 f"      attributes {{microbatches = {microbatches} : i64"
                 + (f", data_parallel = {data_parallel} : i64"
                    if data_parallel > 1 else "") + "}",
                 f"      -> tensor<f32> grads({', '.join(ptypes)}) "
                 f"aux(tensor<i64>) {{",
                 f"  ^bb0({', '.join(f'{n}: {t}' for n, t in zip(bn, ptypes))},"
                 f" %bx: {xt}, %by: {lt}):",
                 "    %zero = arith.constant 0.0 : f32",
                 f"    %h0 = tensor.collapse_shape %bx [[0, 1], [2]] : {xt} "
                 f"into tensor<{N}x{self.D}xf32>"]
        k = 0
        h = "%h0"
        for li, (din, dout, bias, act) in enumerate(self.layers):
            t = f"tensor<{N}x{dout}xf32>"
            lines += [f"    %e{li} = tensor.empty() : {t}",
                      f"    %z{li} = linalg.fill ins(%zero : f32) outs(%e{li}"
                      f" : {t}) -> {t}",
                      f"    %m{li} = linalg.matmul ins({h}, {bn[k]} : "
                      f"tensor<{N}x{din}xf32>, tensor<{din}x{dout}xf32>) "
                      f"outs(%z{li} : {t}) -> {t}"]
            k += 1
            cur = f"%m{li}"
            if bias:
                lines += [
                    f"    %c{li} = linalg.generic {{indexing_maps = ["
                    "affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>, "
                    "affine_map<(i, j) -> (i, j)>], iterator_types = "
                    f"[\"parallel\", \"parallel\"]}} ins({cur}, {bn[k]} : {t}, "
                    f"tensor<{dout}xf32>) outs(%e{li} : {t}) {{",
                    "    ^bb0(%a: f32, %b: f32, %o: f32):",
                    "      %r = arith.addf %a, %b : f32",
                    "      linalg.yield %r : f32",
                    f"    }} -> {t}"]
                k += 1
                cur = f"%c{li}"
            body = [l.replace("%a", "%in") for l in STEP_ACTS[act][1]]
            lines += [
                f"    %a{li} = linalg.generic {{indexing_maps = ["
                "affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],"
                f" iterator_types = [\"parallel\", \"parallel\"]}} ins({cur} :"
                f" {t}) outs(%e{li} : {t}) {{",
                "    ^bb0(%in: f32, %o: f32):",
                "      %czero = arith.constant 0.0 : f32",
                "      %chalf = arith.constant 0.5 : f32"]
            lines += ["      " + l for l in body]
            lines += ["      linalg.yield %r : f32", f"    }} -> {t}"]
            h = f"%a{li}"
        lines += [f"    %fy = tensor.collapse_shape %by [[0, 1]] : {lt} into "
                  f"tensor<{N}xi64>",
                  f"    %l, %n = train.cross_entropy mean {h}, %fy "
                  "ignore_index = -100",
                  f"        : (tensor<{N}x{self.V}xf32>, tensor<{N}xi64>) -> "
                  "(tensor<f32>, tensor<i64>)",
                  "    train.yield %l, %n : tensor<f32>, tensor<i64>",
                  "  }",
                  f"  return %loss, {', '.join(f'%g{i}' for i in range(len(ptypes)))},"
                  f" %count : tensor<f32>, {', '.join(ptypes)}, tensor<i64>",
                  "}"]
        return "\n".join(lines) + "\n"


def find_mpirun(choice):
    """The mpirun command line for 2-rank runs, or None."""
    if choice == "none":
        return None
    if choice != "auto":
        return choice
    mpirun = shutil.which("mpirun")
    if not mpirun:
        return None
    version = subprocess.run([mpirun, "--version"], capture_output=True,
                             text=True)
    if re.search(r"Open ?MPI|OpenRTE", version.stdout + version.stderr):
        return mpirun + " --oversubscribe --allow-run-as-root"
    return mpirun


def step_configs(runner):
    """The configurations a generated step runs in besides the CPU
    pipeline at k = 1, 2 and 4: (name, what it is compared with)."""
    configs = ["cuda-emulated", "aot", "python", "remat", "chunked"]
    if runner.mpirun:
        configs.append("ranks2")
    return configs


def check_step(runner, step, work):
    """Findings of one generated step.

    - cpu k = 1 (the reference run): the loss within 1e-5 of a float64
      forward, the count exact, each gradient within a relative 1e-5 of
      central finite differences of that forward;
    - k = 2 and 4 (micro-batches), aot (ga-compile + ga-exec), python (the
      binding on that library), remat (a memory budget of 70% of the
      measured peak, 90% if the planner refuses that; peak measured within
      it): bitwise k = 1;
    - chunked (loss-chunk-rows): gradients and count bitwise, the loss
      within a relative 1e-6 (its chunks' sums are another grouping of the
      same float32 terms);
    - ranks2 (data_parallel = 2 under mpirun): the same tolerances against
      the float64 references as k = 1 (the ranks' sums are added in another
      order), the count exact;
    - cuda-emulated (the CUDA device program on the CPU): against the
      float64 references, as k = 1.
    """
    findings = []
    inputs = step.params + [step.x, step.labels]
    loss64 = step.forward([p.astype(np.float64) for p in step.params])
    grads64 = step.gradients()
    count = int((step.labels != -100).sum())

    def against_references(tag, got):
        if abs(float(got[0]) - loss64) > 1e-5 * max(1.0, abs(loss64)):
            findings.append(f"{tag}: loss {float(got[0])!r}, float64 "
                            f"{loss64!r}")
        for i, g in enumerate(grads64):
            err = np.linalg.norm(got[1 + i] - g) / max(np.linalg.norm(g),
                                                       1e-12)
            # float32 sums of at most 64 terms (relative error about 1e-7,
            # measured up to 1.4e-7) against float64 central differences
            # (truncation and rounding below 1e-8).
            if not err <= 1e-5:
                findings.append(f"{tag}: gradient {i}: relative error "
                                f"{err:.3g} against finite differences")
        if int(got[-1]) != count:
            findings.append(f"{tag}: count {int(got[-1])}, expected {count}")

    def bitwise(tag, got, base, skip=()):
        for i, (a, b) in enumerate(zip(got, base)):
            if i in skip:
                continue
            why = bitwise_mismatch(a, b)
            if why:
                findings.append(f"{tag}: result {i} against k=1: {why}")

    def run(tag, source, **how):
        got = runner.run_custom(source, inputs, os.path.join(work, tag),
                                **how)
        if isinstance(got, str):
            findings.append(f"{tag}: {got.splitlines()[0]}\n{got}")
            return None
        return got

    base = run("k1", step.emit(1), memory=True)
    if base is None:
        return findings
    base, peak = base
    against_references("k=1", base)
    for k in [2, 4]:
        if step.B % k == 0:
            got = run(f"k{k}", step.emit(k))
            if got is not None:
                bitwise(f"k={k}", got, base)
    for config in step_configs(runner):
        if config == "cuda-emulated":
            got = run(config, step.emit(1), options=CONFIGS[config][0])
            if got is not None:
                against_references(config, got)
        elif config in ("aot", "python"):
            got = run(config, step.emit(1), aot=config)
            if got is not None:
                bitwise(config, got, base)
        elif config == "remat":
            # 70% of the measured peak, or, where the planner refuses it,
            # the smallest peak it says it reaches.
            budget = int(peak * 0.7)
            got = runner.run_custom(
                step.emit(1), inputs, os.path.join(work, "remat"),
                options=f"target=cpu memory-budget={budget}", memory=True,
                refusal="is infeasible")
            if got == "refused":
                smallest = re.search(r"the smallest peak the planner reaches"
                                     r" is (\d+) bytes", runner.last_error)
                budget = int(smallest.group(1)) if smallest else peak
                got = run("remat-smallest", step.emit(1),
                          options=f"target=cpu memory-budget={budget}",
                          memory=True)
            elif isinstance(got, str):
                findings.append(f"remat: {got.splitlines()[0]}\n{got}")
                got = None
            if got is not None:
                got, measured = got
                bitwise(f"remat budget {budget}", got, base)
                if measured > budget:
                    findings.append(f"remat: measured peak {measured} B "
                                    f"over the budget {budget} B")
        elif config == "chunked":
            rows = max(1, step.B * step.S // 3)
            got = run(config, step.emit(1),
                      options=f"target=cpu loss-chunk-rows={rows}")
            if got is not None:
                bitwise(f"chunked ({rows} rows)", got, base, skip=(0,))
                if abs(float(got[0]) - float(base[0])) > 1e-6 * max(
                        1.0, abs(float(base[0]))):
                    findings.append(f"chunked: loss {float(got[0])!r}, "
                                    f"unchunked {float(base[0])!r}")
        elif config == "ranks2" and step.B % 2 == 0:
            got = run(config, step.emit(1, data_parallel=2), ranks=2)
            if got is not None:
                against_references(config, got)
    return findings
