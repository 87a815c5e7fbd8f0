"""The runs of one imported training step on the same ranks, replicated
(the first) and sharded (the others), given as LOG.csv:CHECKPOINT_DIR:
--shard 1 must give the replicated run's losses, gradient norms and final
parameters and moments bitwise; --shard 2 every step's loss and gradient
norm, and every parameter and moment (relative norm of each tensor), within
1e-6 of it; --shard 3 (a fourth run) the --shard 2 run's bitwise.

With --one-rank LOG.csv:CHECKPOINT_DIR (the same step on one rank), every
run's loss at every step within 1e-6 of one rank's, and every run's
parameters and moments no farther from one rank's than twice the
replicated run's distance plus 1e-6 (AdamW divides each element's update
by its own gradient scale: gradient elements that nearly cancel, summed
across the ranks in another order, move the parameters by a few 1e-5
after five steps, replicated or sharded alike)."""
import csv
import sys

import numpy as np

from ga_scripts import checkpoints

TOLERANCE = 1e-6


ROLES = {}  # argument: param, m or v (from the manifests)


def load(spec):
    log, ckpt = spec.split(":")
    with open(log) as f:
        rows = list(csv.DictReader(f))
    state, manifest = checkpoints.read_state(checkpoints.step_dir(ckpt))
    ROLES.update({e["argument"]: e["role"] for e in manifest["state"]})
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


def distances(state, other):
    """The worst relative distance of each role's tensors."""
    worst = {}
    for k, v in other.items():
        role = ROLES[k]
        worst[role] = max(worst.get(role, 0.0), relative(state[k], v)
                          if k in state and state[k].shape == v.shape
                          else float("inf"))
    return worst


failures = 0
argv = sys.argv[1:]
one_rank = None
if argv[0] == "--one-rank":
    one_rank = load(argv[1])
    argv = argv[2:]
ref_rows, ref_state = load(argv[0])
runs = [(ref_rows, ref_state)]
if one_rank is not None:
    replicated = distances(ref_state, one_rank[1])
    for stage, (rows, state) in enumerate(
            [runs[0]] + [load(spec) for spec in argv[1:]]):
        worst_loss = max(relative(float(r["loss"]), float(q["loss"]))
                         for r, q in zip(rows, one_rank[0]))
        worst = distances(state, one_rank[1])
        ok = (len(rows) == len(one_rank[0]) and worst_loss <= TOLERANCE and
              all(worst[role] <= 2 * replicated[role] + TOLERANCE
                  for role in worst))
        print(f"shard={stage} against one rank: losses within "
              f"{worst_loss:.3e}; parameters {worst['param']:.3e}, moments "
              f"{max(worst['m'], worst['v']):.3e} from one rank's "
              f"(shard=0: {replicated['param']:.3e}, "
              f"{max(replicated['m'], replicated['v']):.3e}): "
              f"{'ok' if ok else 'FAIL'}")
        failures += not ok
for stage, spec in enumerate(argv[1:], start=1):
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
