"""What ga-opt's scripts and tests share (as LLVM's `utils/` keeps
`UpdateTestChecks/` beside `update_test_checks.py`): the entry scripts stay
in `scripts/` with their paths and docstrings, and import from here.

- `paths`: the checkout, the build directory and its tools, the
  environment in which a child Python finds ga-opt's packages.
- `tiny_gpt`: the tiny GPT of `examples/gen_tiny_gpt.py` at every benchmark
  size: its inputs (drawn once, one way), its FLOPs, and the same model in
  PyTorch (the baseline of the CPU and GPU benchmarks).
- `reference_harness`: running ga-run on .npy inputs and comparing with
  float64 references (the integration tests and the device kits).
- `difftest`: the differential tester's layers (generator, oracle,
  emitter, runner, minimizer), under `scripts/difftest.py`.

The one configuration: the lit suite puts `python/` and `scripts/` on
`PYTHONPATH` (`test/lit.cfg.py`); a script run by hand finds this package
beside it, and importing it puts the checkout's `python/` (ga_import,
ga_opt, ga_step) on the path where that is not already importable. No
other file adds to `sys.path`.
"""

import os
import sys

_PYTHON = os.path.join(os.path.dirname(os.path.dirname(
    os.path.dirname(os.path.abspath(__file__)))), "python")
if os.path.isdir(_PYTHON) and _PYTHON not in sys.path:
    sys.path.append(_PYTHON)
