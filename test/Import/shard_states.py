"""The runs of one imported training step on the same ranks, replicated
(the first) and sharded (the others), given as LOG.csv:CHECKPOINT_DIR:
--shard 1 must give the replicated run's losses, gradient norms and final
parameters and moments bitwise; --shard 2 every step's loss and gradient
norm, and every parameter and moment (relative norm of each tensor), within
1e-6 of it."""
import csv
import json
import os
import sys

import numpy as np

TOLERANCE = 1e-6


def load(spec):
    log, ckpt = spec.split(":")
    with open(log) as f:
        rows = list(csv.DictReader(f))
    with open(os.path.join(ckpt, "latest")) as f:
        step = os.path.join(ckpt, f.read().strip())
    with open(os.path.join(step, "manifest.json")) as f:
        manifest = json.load(f)
    state = {e["argument"]: np.load(os.path.join(step, e["file"]))
             for e in manifest["state"]}
    return rows, state


def relative(a, b):
    a = np.asarray(a, np.float64).ravel()
    b = np.asarray(b, np.float64).ravel()
    return float(np.linalg.norm(a - b) / max(np.linalg.norm(b), 1e-300))


failures = 0
ref_rows, ref_state = load(sys.argv[1])
for stage, spec in enumerate(sys.argv[2:], start=1):
    rows, state = load(spec)
    if stage == 1:
        curve = [(r["loss"], r["grad_norm"]) for r in rows]
        same = (curve == [(r["loss"], r["grad_norm"]) for r in ref_rows] and
                sorted(state) == sorted(ref_state) and
                all(state[k].tobytes() == v.tobytes()
                    for k, v in ref_state.items()))
        print(f"shard=1: {len(rows)} steps and {len(state)} tensors "
              f"{'bitwise those of shard=0' if same else 'DIFFER'}")
        failures += not same
        continue
    worst_log = max(relative(float(r[c]), float(q[c]))
                    for r, q in zip(rows, ref_rows)
                    for c in ("loss", "grad_norm"))
    worst_state = max(relative(state[k], v) if k in state and
                      state[k].shape == v.shape else float("inf")
                      for k, v in ref_state.items())
    ok = (len(rows) == len(ref_rows) and worst_log <= TOLERANCE and
          worst_state <= TOLERANCE)
    print(f"shard={stage}: {len(rows)} steps, losses and norms within "
          f"{worst_log:.3e}, {len(state)} tensors within {worst_state:.3e} "
          f"of shard=0: {'ok' if ok else 'FAIL'}")
    failures += not ok
sys.exit(1 if failures else 0)
