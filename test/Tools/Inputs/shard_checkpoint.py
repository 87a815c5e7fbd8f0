"""Rewrites a whole ga-train checkpoint step as a sharded one, as the
ranks of `ga-train --checkpoint-shards` would write it: every state tensor
flattened, padded with zeros to R * c (c = ceil(n / R)) and saved as R
files argK.rankI.npy listed under "shards" in the manifest.

  shard_checkpoint.py SRC_STEP_DIR DST_CKPT_DIR RANKS [--short]

--short writes each shard one element short (a checkpoint whose shards do
not hold the tensor). DST_CKPT_DIR gets the step directory and `latest`.
"""

import json
import os
import sys

import numpy as np


def main():
    src, dst, ranks = sys.argv[1], sys.argv[2], int(sys.argv[3])
    short = "--short" in sys.argv[4:]
    with open(os.path.join(src, "manifest.json")) as f:
        manifest = json.load(f)
    name = os.path.basename(os.path.normpath(src))
    step = os.path.join(dst, name)
    os.makedirs(step, exist_ok=True)
    for entry in manifest["state"]:
        flat = np.load(os.path.join(src, entry.pop("file"))).ravel()
        c = -(-flat.size // ranks)
        padded = np.zeros(ranks * c, flat.dtype)
        padded[:flat.size] = flat
        files = []
        for rank in range(ranks):
            file = f"arg{entry['argument']}.rank{rank}.npy"
            part = padded[rank * c:(rank + 1) * c]
            np.save(os.path.join(step, file), part[:-1] if short else part)
            files.append(file)
        entry["shards"] = files
    with open(os.path.join(step, "manifest.json"), "w") as f:
        json.dump(manifest, f)
    with open(os.path.join(dst, "latest"), "w") as f:
        f.write(name + "\n")


if __name__ == "__main__":
    main()
