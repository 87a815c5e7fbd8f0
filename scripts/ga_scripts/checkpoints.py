"""Reading ga-train's checkpoints (tools/ga-train/Checkpoint.h) with numpy.

A checkpoint is DIR/step-NNNNNNNN/ with manifest.json; each state entry
names its argument, role, type and either one whole .npy ("file") or the
ranks' shards in order ("shards": each rank's c elements of the flat
tensor, padded with zeros to R * c), which read_state assembles whole.
"""

import json
import os
import re

import numpy as np

def step_dir(ckpt, at=None):
    """The directory of step `at` in the checkpoint directory `ckpt` (its
    latest by default)."""
    if at is not None:
        return os.path.join(ckpt, f"step-{at:08d}")
    with open(os.path.join(ckpt, "latest")) as f:
        return os.path.join(ckpt, f.read().strip())


def shape_of(type_text):
    """The shape of a manifest type such as 'tensor<4x3xf32>'."""
    inner = re.match(r"tensor<([^>]*)>", type_text).group(1)
    return tuple(int(d) for d in inner.split("x")[:-1])


def read_entry(step, entry):
    """One state entry's array, whole."""
    if "file" in entry:
        return np.load(os.path.join(step, entry["file"]))
    parts = [np.load(os.path.join(step, f)) for f in entry["shards"]]
    shape = shape_of(entry["type"])
    n = int(np.prod(shape, dtype=np.int64))
    flat = np.concatenate(parts)
    if any(p.shape != parts[0].shape for p in parts) or flat.size < n:
        raise ValueError(f"{step}: the shards of argument "
                         f"{entry['argument']} do not hold {entry['type']}")
    return flat[:n].reshape(shape)


def read_state(step):
    """({argument: array}, manifest) of the step directory `step`."""
    with open(os.path.join(step, "manifest.json")) as f:
        manifest = json.load(f)
    return {e["argument"]: read_entry(step, e)
            for e in manifest["state"]}, manifest
