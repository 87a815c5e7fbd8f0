"""Writes the padded random inputs of an example (reference_harness) as
OUT/arg<i>.npy: example_npy.py OUT mlp|tiny_gpt"""
import os
import sys

import numpy as np

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..",
                                "Integration"))
from reference_harness import padded_example_inputs  # noqa: E402

out, name = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for i, a in enumerate(padded_example_inputs(np.random.default_rng(5))[name]):
    np.save(os.path.join(out, f"arg{i}.npy"), a)
