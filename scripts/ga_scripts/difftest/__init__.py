"""The differential tester's layers, each importing only those before it:

  program   values, operations, programs; element types and rounding bounds
  oracle    every operation evaluated in NumPy (no compiler code)
  emitter   every operation written as MLIR; bundles as one function
  generator random valid programs
  runner    the configurations, compiled and run; results checked
  minimizer delta debugging and reproducers
  steps     generated training steps (splits, gradients, ranks)
  corpus    the examples and lit inputs across configurations

`scripts/difftest.py` is the command.
"""
