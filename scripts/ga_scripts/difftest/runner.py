"""The runner: the configurations that must agree, each compiled and
run by ga-opt's tools, and a bundle's results checked against the oracle
and against each other."""

import os
import re
import shlex
import shutil
import subprocess
import sys

import numpy as np

from ga_scripts.paths import PYTHON, child_env
from ga_scripts.reference_harness import save_arrays

from .emitter import bundle_expected, bundle_inputs, emit_bundle
from .program import NP_TYPES


CONFIGS = {
    "cpu": ("target=cpu", []),
    "cpu-scalar": ("target=cpu vectorize=false", []),
    "cpu-unfused": ("target=cpu fuse=false", []),
    "cpu-threads": ("target=cpu", ["--num-threads=2"]),
    # The attention as written, as on the CPU (target=cuda's default is
    # over tiles: another summation order, whose emulation
    # cuda-emulate.test checks against the CPU's tiles).
    "cuda-emulated": (
        "target=cuda gpu-emulate=true gpu-split-reductions=false "
        "attention=unfused", []),
    "aot": ("target=cpu", None),
}
BITWISE_PAIRS = [("cpu", "cpu-threads"), ("cpu", "aot"),
                 ("cpu", "cpu-unfused"), ("cpu-scalar", "cuda-emulated")]


# Running.

PYTHON_CALL = """
import sys
import numpy as np
import ga_step
step = ga_step.load(sys.argv[1])
out = sys.argv[2]
args = [np.load(p) for p in sys.argv[3:]]
results = step(*args)
results = results if isinstance(results, (list, tuple)) else [results]
import os
os.makedirs(out)
for i, r in enumerate(results):
    np.save(os.path.join(out, f"result{i}.npy"), np.asarray(r))
print(f"wrote {len(results)} result(s)")
"""


def run_process(cmd, **kwargs):
    """subprocess.run, with a program that cannot be started (missing,
    being rebuilt) as a failed run instead of an exception."""
    try:
        return subprocess.run(cmd, **kwargs)
    except OSError as e:
        return subprocess.CompletedProcess(cmd, 127, "", f"{cmd[0]}: {e}")


class Runner:
    def __init__(self, build, workdir, mpirun=None):
        self.bin = os.path.join(build, "bin")
        self.workdir = workdir
        self.mpirun = mpirun
        self.last_error = ""

    def run_custom(self, source, inputs, work, options="target=cpu",
                   memory=False, aot=None, ranks=1, refusal=None, extra=()):
        """Results of `source` compiled with `options`: by ga-opt and ga-run
        (under `mpirun -np ranks` when ranks > 1), or, with aot="aot" or
        "python", by ga-compile and ga-exec or the Python binding. With
        `memory`, (results, measured peak bytes). "refused" when the
        compiler's error contains `refusal`; an error string otherwise.
        `extra`: more flags of ga-run."""
        os.makedirs(work, exist_ok=True)
        src = os.path.join(work, "input.mlir")
        with open(src, "w") as f:
            f.write(source)
        paths = save_arrays(inputs, os.path.join(work, "arg"))
        out = os.path.join(work, "out")
        shutil.rmtree(out, ignore_errors=True)
        if aot:
            lib = os.path.join(work, "libstep.so")
            rest = options.replace("target=cpu", "").strip()
            done = run_process(
                [self.tool("ga-compile"), src, "-o", lib, "--jobs=1"]
                + ([f"--pipeline-options={rest}"] if rest else []),
                capture_output=True, text=True)
            if done.returncode:
                return f"ga-compile failed:\n{done.stderr[-3000:]}"
            if aot == "python":
                cmd = [sys.executable, "-c", PYTHON_CALL, lib, out, *paths]
            else:
                cmd = [self.tool("ga-exec"), lib, *paths, "--out-dir", out,
                       "--num-threads=1"]
        else:
            lowered = os.path.join(work, "lowered.mlir")
            done = run_process(
                [self.tool("ga-opt"), src, f"--ga-pipeline={options}", "-o",
                 lowered], capture_output=True, text=True)
            if done.returncode:
                if refusal and refusal in done.stderr:
                    self.last_error = done.stderr
                    return "refused"
                return f"ga-opt failed:\n{done.stderr[-3000:]}"
            launcher = (shlex.split(self.mpirun) + ["-np", str(ranks)]
                        if ranks > 1 else [])
            cmd = [*launcher, self.tool("ga-run"), lowered, *paths,
                   "--out-dir", out, *extra] + (["--report-memory"] if memory
                                                else [])
        # (ga_step from the checkout, for the Python binding's call.)
        done = run_process(cmd, capture_output=True, text=True,
                           env=child_env(PYTHON,
                                         env=dict(os.environ,
                                                  OMP_NUM_THREADS="1")))
        if done.returncode:
            return f"{os.path.basename(cmd[0])} exited with " \
                   f"{done.returncode}:\n{done.stdout[-1500:]}" \
                   f"{done.stderr[-3000:]}"
        m = re.search(r"wrote (\d+) result", done.stdout)
        count = int(m.group(1)) if m else 0
        results = [np.load(os.path.join(out, f"result{i}.npy"))
                   for i in range(count)]
        if memory:
            peak = re.search(r"^budget_peak_bytes: (\d+)", done.stdout, re.M)
            return results, int(peak.group(1)) if peak else 0
        return results

    def tool(self, name):
        return os.path.join(self.bin, name)

    def run(self, config, source, inputs, work):
        """Results of `source` under `config` (list of arrays), or an error
        string."""
        options, extra = CONFIGS[config]
        if extra is None:  # ahead of time
            return self.run_custom(source, inputs, work, options, aot="aot")
        return self.run_custom(source, inputs, work, options, extra=extra)


def oracle_mismatch(got, value):
    """None when `got` is within the oracle's bound of `value`, else a
    description."""
    want_dtype = NP_TYPES[value.dtype]
    if got.dtype != want_dtype or tuple(got.shape) != value.shape:
        return f"got {got.dtype} {got.shape}, expected " \
               f"{np.dtype(want_dtype)} {value.shape}"
    if not value.is_float:
        bad = np.asarray(got) != np.asarray(value.ref)
        if bad.any():
            i = tuple(np.argwhere(bad)[0])
            return f"element {i}: {got[i]!r}, expected {value.ref[i]!r}"
        return None
    g = np.asarray(got, np.float64)
    ref = np.asarray(value.ref, np.float64)
    bound = 2 * np.asarray(value.err) + 0.0
    diff = np.abs(g - ref)
    bad = ~(diff <= bound) | ~np.isfinite(g)
    if bad.any():
        i = tuple(np.argwhere(bad)[0])
        return (f"element {i}: {g[i]!r}, expected {ref[i]!r} within "
                f"{bound[i]:.3g} ({int(bad.sum())} of {bad.size} elements "
                f"off)")
    return None


def bitwise_mismatch(a, b):
    if a.dtype != b.dtype or a.shape != b.shape:
        return f"{a.dtype} {a.shape} against {b.dtype} {b.shape}"
    if a.tobytes() != b.tobytes():
        bad = np.asarray(a).reshape(-1).view(np.uint8) != \
            np.asarray(b).reshape(-1).view(np.uint8)
        return (f"different bits in {int(bad.sum())} of {bad.size} bytes "
                f"({a.ravel()[:4]} against {b.ravel()[:4]}...)")
    return None


def check_bundle(runner, progs, configs, work):
    """[(kind, description, program index, result index within that
    program, configs)] of one bundle."""
    source = emit_bundle(progs)
    inputs = bundle_inputs(progs)
    expected = bundle_expected(progs)
    # Global result index -> (program index, its result index).
    owner = [(i, j) for i, prog in enumerate(progs)
             for j in range(len(prog.results))]
    results, findings = {}, []
    for config in configs:
        got = runner.run(config, source, inputs, os.path.join(work, config))
        if isinstance(got, str):
            findings.append(("error", got, None, None, (config,)))
            continue
        if len(got) != len(expected):
            findings.append(("error", f"{len(got)} results, expected "
                             f"{len(expected)}", None, None, (config,)))
            continue
        results[config] = got
        for k, (g, (prog, value)) in enumerate(zip(got, expected)):
            why = oracle_mismatch(g, value)
            if why:
                findings.append(("oracle", why, *owner[k], (config,)))
    for a, b in BITWISE_PAIRS:
        if a in results and b in results:
            for k, (x, y) in enumerate(zip(results[a], results[b])):
                why = bitwise_mismatch(x, y)
                if why:
                    findings.append(("bitwise", why, *owner[k], (a, b)))
    if any(f[0] == "error" for f in findings) and len(progs) > 1:
        # A configuration failed on the bundle: every program alone, in
        # every configuration, so that one program's error neither hides
        # the others' findings nor goes without its program's name.
        findings = []
        for i, prog in enumerate(progs):
            for f in check_bundle(runner, [prog], configs,
                                  os.path.join(work, f"alone{i}")):
                findings.append((f[0], f[1], i, f[3], f[4]))
    return findings
