"""The Python binding's errors: each bad input of ga-run.test that applies
to arrays gets ga-run's message; a step that reported an error is followed
by a clean one."""
import sys

import numpy as np

import ga_step

lib, runtime = sys.argv[1], sys.argv[2]
step = ga_step.load(lib)
print("signature:", step.name, [r.role for r in step.signature.results])
w = np.ones((4, 3), np.float32)
x = np.ones((8, 4), np.float32)
y = np.array([0, 1, 2, -100, 0, 1, 2, 0], np.int64)


def attempt(what, *args, **kwargs):
    try:
        step(*args, **kwargs)
        print(what, "-> no error")
    except ga_step.StepError as e:
        print(what, "->", e, f"(code {e.code})")


loss, grad, count = step(w, x, y)
print("loss %.6f count %d" % (loss, count))
attempt("count", w, x)
attempt("dtype", w.astype(np.float64), x, y)
attempt("shape", np.ones((3, 4), np.float32), x, y)
bad = y.copy()
bad[4] = 3
attempt("label", w, x, bad)
loss2, _, _ = step(w, x, y)
print("after the error: loss %.6f" % loss2)
attempt("out", w, x, y, out=[np.empty((), np.float32)])
# A non-contiguous argument is copied, and gives the same bits.
strided = np.ones((4, 6), np.float32)[:, ::2]
print("strided same:", step(strided, x, y)[1].tobytes() == grad.tobytes())
for path in (lib + ".missing", runtime):
    try:
        ga_step.load(path)
    except ga_step.StepError as e:
        print("load ->", e)
