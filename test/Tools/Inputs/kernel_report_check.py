"""Checks ga-compile's kernel report (JSON) of a step against the driver
stand-in's log of one run of it: every kernel launch the report counts is
one the stand-in saw (besides the runtime's own ga_gemm_pointer_arrays, one
per pointer-array GEMM call), and every cuBLAS product it lists is one the
stand-in checked.

    kernel_report_check.py REPORT.json MOCK.log
"""

import json
import sys


def main():
    report = json.load(open(sys.argv[1]))
    log = {}
    for line in open(sys.argv[2]):
        key, _, value = line.partition(":")
        log[key.strip()] = value.strip()
    launches = sum(k["launches"] for k in report["kernels"])
    products = sum(p["calls"] * p["products"] for p in report["products"])
    calls = sum(p["calls"] for p in report["products"])
    seen = int(log["launches"]) - int(log["pointer-array gemm calls"])
    print(f"report: {launches} launches, {products} products in {calls} "
          f"calls; stand-in: {seen} launches of the step's kernels, "
          f"{log['gemms']} products")
    ok = launches == seen and products == int(log["gemms"])
    # Each row's bytes and FLOPs are non-negative and its bound positive
    # where it moves bytes.
    for k in report["kernels"]:
        moved = k["read_bytes"] + k["written_bytes"]
        ok = ok and k["flops"] >= 0 and (moved == 0 or k["bound_us"] > 0)
    print("kernel report check:", "ok" if ok else "MISMATCH")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
