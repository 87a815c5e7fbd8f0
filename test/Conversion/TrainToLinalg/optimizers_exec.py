#!/usr/bin/env python3
"""Execution test of train.sgd, train.adamw, train.global_norm and
train.clip_by_global_norm lowered to linalg, against an independent float64
reference written here with the standard library only (the formulas of
torch.optim.SGD with weight decay, torch.optim.AdamW and
torch.nn.utils.clip_grad_norm_).

  optimizers_exec.py write OUT.mlir   writes the program (seeded data)
  optimizers_exec.py check RUN.txt    checks what the program printed

The tolerance is exec_harness.py's.
"""

import math
import random
import re

from exec_harness import all_close, f32, main, report

N, M = 6, 4
LR, STEP, WD_SGD = 0.01, 3, 0.1
B1, B2, EPS, WD_ADAM = 0.9, 0.999, 1e-8, 0.01
MAX_NORM = 0.5


def data():
    rng = random.Random(11)
    vec = lambda n, lo, hi: [f32(rng.uniform(lo, hi)) for _ in range(n)]
    return {"p": vec(N, -1, 1), "g": vec(N, -1, 1), "m": vec(N, -0.1, 0.1),
            "v": vec(N, 0.0, 0.01), "h": vec(M, -1, 1)}


def reference(d):
    p, g, m, v, h = d["p"], d["g"], d["m"], d["v"], d["h"]
    sgd = [pi - LR * (gi + WD_SGD * pi) for pi, gi in zip(p, g)]
    new_m = [B1 * mi + (1 - B1) * gi for mi, gi in zip(m, g)]
    new_v = [B2 * vi + (1 - B2) * gi * gi for vi, gi in zip(v, g)]
    bc1, bc2 = 1 - B1 ** STEP, 1 - B2 ** STEP
    adam = [pi * (1 - LR * WD_ADAM) - LR * (mi / bc1) /
            (math.sqrt(vi / bc2) + EPS)
            for pi, mi, vi in zip(p, new_m, new_v)]
    norm = math.sqrt(sum(x * x for x in g) + sum(x * x for x in h))
    scale = min(1.0, MAX_NORM / (norm + 1e-6))
    return {"sgd": sgd, "adam_p": adam, "adam_m": new_m, "adam_v": new_v,
            "norm": [norm], "clip_g": [x * scale for x in g],
            "clip_h": [x * scale for x in h], "clip_norm": [norm]}


def write(path):
    d = data()
    t = lambda n: f"tensor<{n}xf32>"
    const = lambda name, xs: (f"  %{name} = arith.constant dense<["
                              + ", ".join(f"{x:.9e}" for x in xs)
                              + f"]> : {t(len(xs))}")
    prints = []
    for name, n in [("sgd", N), ("adam_p", N), ("adam_m", N), ("adam_v", N),
                    ("clip_g", N), ("clip_h", M)]:
        prints.append(
            f'  %r_{name} = vector.transfer_read %{name}[%c0], %pad : '
            f'{t(n)}, vector<{n}xf32>\n'
            f'  vector.print str "{name} "\n'
            f'  vector.print %r_{name} : vector<{n}xf32>')
    for name in ["norm", "clip_norm"]:
        prints.append(f"  %s_{name} = tensor.extract %{name}[] : tensor<f32>\n"
                      f'  vector.print str "{name} "\n'
                      f"  vector.print %s_{name} : f32")
    program = "\n".join([
        "func.func @main() {",
        "  %c0 = arith.constant 0 : index",
        "  %pad = arith.constant 0.0 : f32",
        *[const(k, d[k]) for k in ["p", "g", "m", "v", "h"]],
        f"  %lr = arith.constant dense<{LR}> : tensor<f32>",
        f"  %t = arith.constant dense<{STEP}> : tensor<i64>",
        f"  %sgd = train.sgd %p, %g, %lr {{weight_decay = {WD_SGD}}} "
        f": {t(N)}, tensor<f32>",
        f"  %adam_p, %adam_m, %adam_v = train.adamw %p, %g, %m, %v, %lr, %t "
        f"{{beta1 = {B1}, beta2 = {B2}, eps = {EPS:.1e}, weight_decay = {WD_ADAM}}}"
        f" : {t(N)}, {t(N)}, tensor<f32>, tensor<i64>",
        f"  %norm = train.global_norm %g, %h : {t(N)}, {t(M)} -> tensor<f32>",
        f"  %clip_g, %clip_h, %clip_norm = train.clip_by_global_norm %g, %h "
        f"max_norm = {MAX_NORM} : {t(N)}, {t(M)} -> tensor<f32>",
        *prints,
        "  return",
        "}",
    ])
    with open(path, "w") as f:
        f.write(program + "\n")


def check(path):
    expected = reference(data())
    fields = dict(re.findall(r"(\w+) (.+)", open(path).read()))
    failures = []
    for key, exp in expected.items():
        got = [float(x) for x in
               re.findall(r"[-+]?(?:\d+\.?\d*(?:e[-+]?\d+)?|nan|inf)",
                          fields.get(key, ""))]
        if not all_close(got, exp):
            failures.append(f"{key}: expected {exp}, got {got}")
    return report(failures, len(expected), "results")


if __name__ == "__main__":
    main(__doc__, write, check)
