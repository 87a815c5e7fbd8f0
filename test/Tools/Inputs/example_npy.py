"""Writes the padded random inputs of an example (reference_harness) as
OUT/arg<i>.npy: example_npy.py OUT mlp|tiny_gpt"""
import os
import sys

import numpy as np

from ga_scripts.reference_harness import padded_example_inputs

out, name = sys.argv[1], sys.argv[2]
os.makedirs(out, exist_ok=True)
for i, a in enumerate(padded_example_inputs(np.random.default_rng(5))[name]):
    np.save(os.path.join(out, f"arg{i}.npy"), a)
