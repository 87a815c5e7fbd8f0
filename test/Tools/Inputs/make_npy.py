"""Writes the .npy files that ga-run-errors.test feeds to ga-run."""
import os
import sys

import numpy as np

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
np.save(f"{out}/w.npy", np.ones((4, 3), np.float32))
np.save(f"{out}/x.npy", np.ones((8, 4), np.float32))
np.save(f"{out}/y.npy", np.array([0, 1, 2, -100, 0, 1, 2, 0], np.int64))
np.save(f"{out}/w_f64.npy", np.ones((4, 3), np.float64))
np.save(f"{out}/w_shape.npy", np.ones((3, 4), np.float32))
np.save(f"{out}/w_fortran.npy", np.asfortranarray(np.ones((4, 3), np.float32)))
np.save(f"{out}/w_f16.npy", np.ones((4, 3), np.float16))
with open(f"{out}/garbage.npy", "wb") as f:
    f.write(b"not an array")
with open(f"{out}/w.npy", "rb") as f:
    data = f.read()
with open(f"{out}/truncated.npy", "wb") as f:
    f.write(data[:-8])
# Non-finite inputs and an invalid label (linear-ce.mlir has V = 3).
x_nan = np.ones((8, 4), np.float32)
x_nan[2, 1] = np.nan
np.save(f"{out}/x_nan.npy", x_nan)
x_inf = np.ones((8, 4), np.float32)
x_inf[5, 0] = np.inf
np.save(f"{out}/x_inf.npy", x_inf)
np.save(f"{out}/y_bad.npy", np.array([0, 1, 2, -100, 3, 1, 2, 0], np.int64))
# Labels far outside [0, 3): unchecked, they must still read inside the row.
np.save(f"{out}/y_far.npy",
        np.array([0, 10**6, 2, -100, -2**40, 1, 2**62, 0], np.int64))
