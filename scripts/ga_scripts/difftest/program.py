"""The programs' representation: values, operations, programs, their
element types and the rounding bounds the oracle's tolerances use."""


import numpy as np


F32_EPS = 2.0 ** -24
F64_EPS = 2.0 ** -53
BF16_EPS = 2.0 ** -8
TRANSCENDENTAL_ULPS = 16
DIMS = [1, 3, 4, 6, 8, 12, 16]
FLOATS = ["f32", "f32", "f32", "f64"]
INTS = ["i32", "i64"]
NP_TYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
            "i64": np.int64, "i1": np.bool_}

def eps_of(dtype):
    return F64_EPS if dtype == "f64" else F32_EPS


class Value:
    """An SSA value of a program: its type and its oracle (float64 values,
    or exact integers and booleans, and for floats the error bound)."""

    def __init__(self, name, shape, dtype, ref, err=None, exact=False):
        self.name, self.shape, self.dtype = name, tuple(shape), dtype
        self.ref = ref
        self.err = err if err is not None else np.zeros(self.shape)
        # Exact: the float32 evaluation computes this value without
        # rounding (arguments, converted small integers).
        self.exact = exact

    @property
    def is_float(self):
        return self.dtype in ("f32", "f64")

    def type(self):
        dims = "x".join(str(d) for d in self.shape)
        return f"tensor<{dims}x{self.dtype}>" if dims else \
            f"tensor<{self.dtype}>"


class Op:
    """One operation: `kind`, operand names, result name, parameters."""

    def __init__(self, kind, operands, result, **params):
        self.kind, self.operands, self.result = kind, list(operands), result
        self.params = params


class Program:
    def __init__(self):
        self.args = []      # Values (with .ref as the input array)
        self.ops = []
        self.results = []   # names
        self.values = {}    # name -> Value (after evaluate)


def affine(rank, exprs):
    dims = ", ".join(f"d{i}" for i in range(rank))
    return f"affine_map<({dims}) -> ({', '.join(exprs)})>"
