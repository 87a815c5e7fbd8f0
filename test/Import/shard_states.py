"""The runs of one imported training step on the same ranks, replicated
(the first) and sharded (the others), given as LOG.csv:CHECKPOINT_DIR:
--shard 1 must give the replicated run's losses, gradient norms and final
parameters and moments bitwise; --shard 2 every step's loss and gradient
norm, and every parameter and moment (relative norm of each tensor), within
1e-6 of it; --shard 3 (a fourth run) the --shard 2 run's bitwise."""
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


def bitwise(run, other):
    rows, state = run
    other_rows, other_state = other
    curve = [(r["loss"], r["grad_norm"]) for r in rows]
    return (curve == [(r["loss"], r["grad_norm"]) for r in other_rows] and
            sorted(state) == sorted(other_state) and
            all(state[k].tobytes() == v.tobytes()
                for k, v in other_state.items()))


failures = 0
ref_rows, ref_state = load(sys.argv[1])
runs = [(ref_rows, ref_state)]
for stage, spec in enumerate(sys.argv[2:], start=1):
    rows, state = load(spec)
    runs.append((rows, state))
    if stage in (1, 3):
        # Stage 1 against the replicated run, stage 3 against stage 2.
        against = stage - 1
        same = bitwise(runs[stage], runs[against])
        print(f"shard={stage}: {len(rows)} steps and {len(state)} tensors "
              f"{'bitwise those of shard=' + str(against) if same else 'DIFFER'}")
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
