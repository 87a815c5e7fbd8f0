"""The invariant every ga-opt pass keeps: run alone on any input that
verifies, a pass either produces IR that verifies (checked by parsing its
output again) or fails with an error of its own. Never a crash, never an
invalid module reported as success.

The inputs are every chunk (split at `// -----`) of every .mlir file under
the test directories and the examples that ga-opt parses and verifies as it
is; the passes are every ga-opt pass that `ga-opt --help` lists (train-*,
ga-*, convert-train-*, test-train-*), a few with their options, and the
whole pipeline.

  pass_invariant.py --ga-opt GA_OPT --root SRC [--jobs N]
"""

import argparse
import concurrent.futures
import os
import re
import shutil
import subprocess
import sys
import tempfile

EXTRA_PASSES = [
    "--train-split-batch=naive=true",
    "--ga-pipeline=target=cpu",
    "--ga-pipeline=target=cpu naive=true vectorize=false check-labels=false",
    "--train-plan-remat=memory-budget=30000",
]


def chunks(path):
    with open(path) as f:
        text = f.read()
    return [c for c in re.split(r"^// -----\s*$", text, flags=re.M)
            if c.strip()]


def run(cmd, stdin=None):
    return subprocess.run(cmd, input=stdin, capture_output=True, text=True,
                          timeout=300)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--ga-opt", required=True)
    parser.add_argument("--root", required=True)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    args = parser.parse_args()

    help_text = run([args.ga_opt, "--help"]).stdout
    passes = sorted(set(re.findall(
        r"^\s+(--(?:train|ga|convert-train|test-train)-[a-z0-9-]+)\s",
        help_text, re.M)) - {"--ga-pipeline"})
    passes += EXTRA_PASSES

    files = []
    for sub in ("test", "examples"):
        for dirpath, _, names in os.walk(os.path.join(args.root, sub)):
            files += [os.path.join(dirpath, n) for n in names
                      if n.endswith(".mlir")]
    workdir = tempfile.mkdtemp(prefix="pass-invariant-")
    inputs = []
    for path in sorted(files):
        for i, chunk in enumerate(chunks(path)):
            name = os.path.join(
                workdir, os.path.relpath(path, args.root).replace("/", "_")
                + f".{i}.mlir")
            with open(name, "w") as f:
                f.write(chunk)
            # Only inputs that parse and verify as they are.
            if run([args.ga_opt, name, "-o", os.devnull]).returncode == 0:
                inputs.append(name)

    def check(job):
        name, pass_flag = job
        # The module goes to a file: some passes print reports to stdout.
        out = f"{name}.{abs(hash(pass_flag))}.out.mlir"
        proc = run([args.ga_opt, name, pass_flag, "--verify-each=false",
                    "--mlir-print-op-generic", "-o", out])
        label = f"{os.path.basename(name)} {pass_flag}"
        if proc.returncode < 0 or proc.returncode > 1:
            return f"FAIL {label}: exit {proc.returncode} (crash)\n{proc.stderr[-2000:]}"
        if proc.returncode == 1:
            if "error:" not in proc.stderr:
                return f"FAIL {label}: failed without an error\n{proc.stderr[-2000:]}"
            return None
        again = run([args.ga_opt, out, "-o", os.devnull])
        os.remove(out)
        if again.returncode != 0:
            return (f"FAIL {label}: reported success but its output does not "
                    f"verify:\n{again.stderr[-2000:]}")
        return None

    jobs = [(name, p) for name in inputs for p in passes]
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        for result in pool.map(check, jobs):
            if result:
                failures += 1
                print(result)
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"pass-invariant: {len(passes)} passes x {len(inputs)} inputs: "
          f"{len(jobs) - failures} of {len(jobs)} runs kept the invariant")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
