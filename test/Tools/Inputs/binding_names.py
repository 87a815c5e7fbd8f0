"""The Python binding on a step whose arguments are named (as ga-import
names them): the names from the library's signature, the arguments taken
by name, the same results as in order, and the errors of a mapping that
lacks an input or has one too many."""
import sys

import numpy as np

import ga_step

named = ga_step.load(sys.argv[1])
plain = ga_step.load(sys.argv[2])
print("names:", named.input_names)
print("plain names:", plain.input_names)
print("version:", named.signature.text.splitlines()[0],
      "/", plain.signature.text.splitlines()[0])
w = np.linspace(-1, 1, 12, dtype=np.float32).reshape(4, 3)
x = np.linspace(0, 2, 32, dtype=np.float32).reshape(8, 4)
y = np.array([0, 1, 2, -100, 0, 1, 2, 0], np.int64)
args = named.arguments({"labels": y, "x": x, "fc.weight": w})
by_name = named(*args)
in_order = plain(w, x, y)
print("same bits:", all(a.tobytes() == b.tobytes()
                        for a, b in zip(by_name, in_order)))
for what, mapping in (("lacking", {"x": x, "labels": y}),
                      ("extra", {"fc.weight": w, "x": x, "labels": y,
                                 "fc.bias": w})):
    try:
        named.arguments(mapping)
        print(what, "-> no error")
    except ga_step.StepError as e:
        print(what, "->", e)
try:
    plain.arguments({"x": x})
except ga_step.StepError as e:
    print("unnamed ->", e)
try:
    named(w.astype(np.float64), x, y)
except ga_step.StepError as e:
    print("dtype ->", e)
