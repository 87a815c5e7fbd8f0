#!/usr/bin/env python3
"""Execution test of train.cross_entropy and its gradient on bf16 logits,
against a float64 reference written here with the standard library only.

  cross_entropy_bf16_exec.py write OUT.mlir   writes the program (seeded data)
  cross_entropy_bf16_exec.py check RUN.txt    checks what the program printed

The lowering computes in f32 and rounds each result to bf16 once, so every
value must agree with the reference (on the same bf16 logits) within one
bf16 unit in the last place, a relative 2^-8 (absolute 1e-7 near 0). Summed
in bf16 over 512 tokens, the loss would be off by far more: once the running
sum reaches a few hundred, bf16's spacing there (2 to 4) swallows a token's
loss (about 2).
"""

import math
import random
import re
import struct

from exec_harness import main, report

N, V, IGNORE, ROWS = 512, 8, -100, 4
DLOSS = 1.0


def bf16(x):
    """x rounded to the nearest bfloat16 (ties to even), as a float."""
    bits = struct.unpack("I", struct.pack("f", x))[0]
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return struct.unpack("f", struct.pack("I", bits))[0]


def close(actual, expected):
    return abs(actual - expected) <= max(2.0 ** -8 * abs(expected), 1e-7)


def data():
    rng = random.Random(11)
    logits = [[bf16(rng.uniform(-3.0, 3.0)) for _ in range(V)]
              for _ in range(N)]
    labels = [rng.randrange(V) if i % 7 else IGNORE for i in range(N)]
    return logits, labels


def reference(logits, labels):
    """(sum, mean, the gradient of DLOSS * mean for the first ROWS rows)."""
    total, count, grad = 0.0, 0, []
    for i, (row, label) in enumerate(zip(logits, labels)):
        if label == IGNORE:
            continue
        top = max(row)
        total += top + math.log(sum(math.exp(x - top) for x in row)) - row[label]
        count += 1
    for row, label in list(zip(logits, labels))[:ROWS]:
        if label == IGNORE:
            grad.extend([0.0] * V)
            continue
        top = max(row)
        z = sum(math.exp(x - top) for x in row)
        grad.extend(DLOSS / count * (math.exp(x - top) / z - (j == label))
                    for j, x in enumerate(row))
    return total, total / count, grad


def write(path):
    logits, labels = data()
    rows = ", ".join("[" + ", ".join(f"{x:.8e}" for x in row) + "]"
                     for row in logits)
    program = f"""
func.func @main() {{
  %c0 = arith.constant 0 : index
  %pad = arith.constant 0.0 : bf16
  %x = arith.constant dense<[{rows}]> : tensor<{N}x{V}xbf16>
  %y = arith.constant dense<{labels}> : tensor<{N}xi64>
  %one = arith.constant dense<1.0> : tensor<{N}x{V}xbf16>
  %e = tensor.empty() : tensor<{N}x{V}xbf16>
  %l = linalg.mul ins(%x, %one : tensor<{N}x{V}xbf16>, tensor<{N}x{V}xbf16>)
      outs(%e : tensor<{N}x{V}xbf16>) -> tensor<{N}x{V}xbf16>
  %sum = train.cross_entropy sum %x, %y ignore_index = {IGNORE}
      : (tensor<{N}x{V}xbf16>, tensor<{N}xi64>) -> tensor<bf16>
  %mean = train.cross_entropy mean %l, %y ignore_index = {IGNORE}
      : (tensor<{N}x{V}xbf16>, tensor<{N}xi64>) -> tensor<bf16>
  %dloss = arith.constant dense<{DLOSS}> : tensor<bf16>
  %g = train.cross_entropy_grad mean %l, %y, %dloss ignore_index = {IGNORE}
      : (tensor<{N}x{V}xbf16>, tensor<{N}xi64>, tensor<bf16>)
      -> tensor<{N}x{V}xbf16>
  %s = tensor.extract %sum[] : tensor<bf16>
  %m = tensor.extract %mean[] : tensor<bf16>
  %sf = arith.extf %s : bf16 to f32
  %mf = arith.extf %m : bf16 to f32
  %gv = vector.transfer_read %g[%c0, %c0], %pad
      : tensor<{N}x{V}xbf16>, vector<{ROWS}x{V}xbf16>
  %gf = arith.extf %gv : vector<{ROWS}x{V}xbf16> to vector<{ROWS}x{V}xf32>
  vector.print str "sum "
  vector.print %sf : f32
  vector.print str "mean "
  vector.print %mf : f32
  vector.print str "grad "
  vector.print %gf : vector<{ROWS}x{V}xf32>
  return
}}
"""
    with open(path, "w") as f:
        f.write(program)


def check(path):
    total, mean, grad = reference(*data())
    fields = dict(re.findall(r"(\w+) (.+)", open(path).read()))
    failures, checked = [], 0
    expected = {"sum": [total], "mean": [mean], "grad": grad}
    for key, exp in expected.items():
        act = [float(x) for x in
               re.findall(r"[-+0-9.eE]+|nan|inf", fields.get(key, ""))]
        checked += 1
        if len(act) != len(exp) or not all(
                close(a, e) for a, e in zip(act, exp)):
            failures.append(f"{key}: expected {exp}, got {act}")
    return report(failures, checked, "values")


if __name__ == "__main__":
    main(__doc__, write, check)
