#!/usr/bin/env python3
"""Execution test of train.cross_entropy lowered to linalg, against an
independent float64 reference written here with the standard library only.

  cross_entropy_exec.py write OUT.mlir   writes the program (seeded data)
  cross_entropy_exec.py check RUN.txt    checks what the program printed

The tolerance is exec_harness.py's.
"""

import math
import random
import re

from exec_harness import all_close, f32, main, report

N, V, IGNORE = 6, 5, -100
DLOSS = 0.75


def data():
    rng = random.Random(7)
    logits = [[f32(rng.uniform(-4.0, 4.0)) for _ in range(V)] for _ in range(N)]
    labels = [rng.randrange(V) for _ in range(N)]
    labels[1] = IGNORE
    labels[4] = IGNORE
    return logits, labels


def reference(logits, labels):
    """(per-token losses, sum, mean, count) in float64."""
    per_token = []
    for row, label in zip(logits, labels):
        if label == IGNORE:
            per_token.append(0.0)
            continue
        top = max(row)
        lse = top + math.log(sum(math.exp(x - top) for x in row))
        per_token.append(lse - row[label])
    count = sum(1 for label in labels if label != IGNORE)
    total = sum(per_token)
    return per_token, total, (total / count if count else 0.0), count


def reference_grad(logits, labels):
    """d(DLOSS * mean loss)/d logits in float64, row by row (flattened)."""
    count = sum(1 for label in labels if label != IGNORE)
    grad = []
    for row, label in zip(logits, labels):
        if label == IGNORE:
            grad.extend([0.0] * V)
            continue
        top = max(row)
        total = sum(math.exp(x - top) for x in row)
        scale = DLOSS / count
        grad.extend(scale * (math.exp(x - top) / total - (j == label))
                    for j, x in enumerate(row))
    return grad


def dense(values, shape, ety):
    if ety == "f32":
        text = ", ".join("[" + ", ".join(f"{x:.9e}" for x in row) + "]"
                         for row in values)
        return f"dense<[{text}]> : tensor<{'x'.join(map(str, shape))}x{ety}>"
    return (f"dense<[{', '.join(map(str, values))}]> : "
            f"tensor<{'x'.join(map(str, shape))}x{ety}>")


def write(path):
    logits, labels = data()
    all_ignored = [IGNORE] * N
    program = f"""
func.func @losses(%l: tensor<{N}x{V}xf32>, %y: tensor<{N}xi64>) {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : f32
  %mean, %count = train.cross_entropy mean %l, %y ignore_index = {IGNORE}
      : (tensor<{N}x{V}xf32>, tensor<{N}xi64>) -> (tensor<f32>, tensor<i64>)
  %sum = train.cross_entropy sum %l, %y ignore_index = {IGNORE}
      : (tensor<{N}x{V}xf32>, tensor<{N}xi64>) -> tensor<f32>
  %none, %fcount = train.cross_entropy none %l, %y ignore_index = {IGNORE}
      : (tensor<{N}x{V}xf32>, tensor<{N}xi64>) -> (tensor<{N}xf32>, tensor<f32>)
  %m = tensor.extract %mean[] : tensor<f32>
  %s = tensor.extract %sum[] : tensor<f32>
  %c = tensor.extract %count[] : tensor<i64>
  %fc = tensor.extract %fcount[] : tensor<f32>
  %v = vector.transfer_read %none[%c0], %pad : tensor<{N}xf32>, vector<{N}xf32>
  vector.print str "mean "
  vector.print %m : f32
  vector.print str "sum "
  vector.print %s : f32
  vector.print str "count "
  vector.print %c : i64
  vector.print str "fcount "
  vector.print %fc : f32
  vector.print str "none "
  vector.print %v : vector<{N}xf32>
  // A loss and its gradient on logits computed here: the conversion pairs
  // them (shared row statistics and count) and writes the gradient over
  // the logits.
  %one = arith.constant dense<1.0> : tensor<{N}x{V}xf32>
  %e = tensor.empty() : tensor<{N}x{V}xf32>
  %lp = linalg.mul ins(%l, %one : tensor<{N}x{V}xf32>, tensor<{N}x{V}xf32>)
      outs(%e : tensor<{N}x{V}xf32>) -> tensor<{N}x{V}xf32>
  %pmean = train.cross_entropy mean %lp, %y ignore_index = {IGNORE}
      : (tensor<{N}x{V}xf32>, tensor<{N}xi64>) -> tensor<f32>
  %dloss = arith.constant dense<{DLOSS}> : tensor<f32>
  %g = train.cross_entropy_grad mean %lp, %y, %dloss ignore_index = {IGNORE}
      : (tensor<{N}x{V}xf32>, tensor<{N}xi64>, tensor<f32>) -> tensor<{N}x{V}xf32>
  %pm = tensor.extract %pmean[] : tensor<f32>
  %gv = vector.transfer_read %g[%c0, %c0], %pad
      : tensor<{N}x{V}xf32>, vector<{N}x{V}xf32>
  vector.print str "pmean "
  vector.print %pm : f32
  vector.print str "grad "
  vector.print %gv : vector<{N}x{V}xf32>
  return
}}

func.func @main() {{
  %l = arith.constant {dense(logits, [N, V], "f32")}
  %y = arith.constant {dense(labels, [N], "i64")}
  %z = arith.constant {dense(all_ignored, [N], "i64")}
  vector.print str "case padded\\n"
  call @losses(%l, %y) : (tensor<{N}x{V}xf32>, tensor<{N}xi64>) -> ()
  vector.print str "case all-ignored\\n"
  call @losses(%l, %z) : (tensor<{N}x{V}xf32>, tensor<{N}xi64>) -> ()
  return
}}
"""
    with open(path, "w") as f:
        f.write(program)


def check(path):
    logits, labels = data()
    labels_of = {"padded": labels, "all-ignored": [IGNORE] * N}
    cases = {name: reference(logits, ys) for name, ys in labels_of.items()}
    text = open(path).read()
    failures, checked = [], 0
    for name, block in re.findall(r"case (\S+)\n(.*?)(?=case |\Z)", text,
                                  re.S):
        per_token, total, mean, count = cases[name]
        fields = dict(re.findall(r"(\w+) (.+)", block))
        nums = [float(x) for x in re.findall(r"[-+0-9.eE]+|nan|inf",
                                             fields["none"])]
        grad = [float(x) for x in re.findall(r"[-+0-9.eE]+|nan|inf",
                                             fields["grad"])]
        expected = {"mean": [mean], "sum": [total], "count": [count],
                    "fcount": [count], "none": per_token, "pmean": [mean],
                    "grad": reference_grad(logits, labels_of[name])}
        got = {"mean": [float(fields["mean"])], "sum": [float(fields["sum"])],
               "count": [float(fields["count"])],
               "fcount": [float(fields["fcount"])], "none": nums,
               "pmean": [float(fields["pmean"])], "grad": grad}
        for key in expected:
            exp, act = expected[key], got[key]
            checked += 1
            if not all_close(act, exp):
                failures.append(f"{name}/{key}: expected {exp}, got {act}")
    if checked != 14:
        failures.append(f"expected 2 cases x 7 values, checked {checked}")
    return report(failures, checked, "values")


if __name__ == "__main__":
    main(__doc__, write, check)
