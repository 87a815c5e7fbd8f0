"""What the execution tests beside this file share: f32 rounding of the input
data, the tolerance of a printed f32 value against a float64 reference, the
report, and the `write OUT.mlir` / `check RUN.txt` command line.

Tolerance: the programs compute in f32 (relative rounding ~1e-7 per op over at
most a few dozen ops) and vector.print writes 6 significant digits (relative
rounding up to 5e-6), so a value must agree within a relative 2e-5 (absolute
1e-6 near 0).
"""

import struct
import sys


def f32(x):
    """x rounded to the nearest float32."""
    return struct.unpack("f", struct.pack("f", x))[0]


def close(actual, expected):
    return abs(actual - expected) <= max(2e-5 * abs(expected), 1e-6)


def all_close(actual, expected):
    return len(actual) == len(expected) and all(
        close(a, e) for a, e in zip(actual, expected))


def report(failures, checked, what):
    """Prints the failures and the count line the lit tests check; returns
    the exit status."""
    for failure in failures:
        print("FAIL", failure)
    print(f"checked {checked} {what} against the float64 reference")
    return 1 if failures else 0


def main(doc, write, check):
    if len(sys.argv) != 3 or sys.argv[1] not in ("write", "check"):
        sys.exit(doc)
    if sys.argv[1] == "write":
        write(sys.argv[2])
    else:
        sys.exit(check(sys.argv[2]))
