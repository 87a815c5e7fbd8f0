"""The invariant every ga-opt pass keeps: run alone on any input that
verifies, a pass either produces IR that verifies (checked by parsing its
output again) or fails with an error of its own. Never a crash, never an
invalid module reported as success.

The inputs are every chunk (split at `// -----`) of every .mlir file under
the test directories and the examples that ga-opt parses and verifies as it
is; the passes are every ga-opt pass that `ga-opt --help` lists (train-*,
ga-*, convert-train-*, test-train-*), a few with their options, and the
whole pipeline.

Each pass runs once per file on all of its verifying chunks
(`--split-input-file`, each chunk its own module, as when run alone), and
the outputs of all passes on that file verify in one more process:
ga-opt's start-up, not the passes, was most of the time when every chunk
had two processes of its own. Where a pass's run fails (it refuses a chunk,
or crashes) or its output does not verify, every chunk of the file runs
that pass alone, so that each verdict is still per chunk and each finding
names its chunk.

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
                          timeout=900)


def verify_each(ga_opt, names):
    """Whether each file of `names` parses and verifies: one ga-opt run on
    all of them when they all do, one run each otherwise."""
    if not names:
        return []
    combined = names[0] + ".verify.mlir"
    with open(combined, "w") as f:
        f.write("\n// -----\n".join(open(n).read() for n in names))
    ok = run([ga_opt, combined, "--split-input-file", "-o",
              os.devnull]).returncode == 0
    os.remove(combined)
    if ok:
        return [True] * len(names)
    return [run([ga_opt, n, "-o", os.devnull]).returncode == 0 for n in names]


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
    # (combined file, its chunks), one entry per source file with chunks
    # that verify.
    groups = []
    for path in sorted(files):
        base = os.path.join(
            workdir, os.path.relpath(path, args.root).replace("/", "_"))
        names = []
        for i, chunk in enumerate(chunks(path)):
            name = f"{base}.{i}.mlir"
            with open(name, "w") as f:
                f.write(chunk)
            names.append(name)
        # Only inputs that parse and verify as they are.
        verified = [n for n, ok in zip(names, verify_each(args.ga_opt, names))
                    if ok]
        if verified:
            combined = base + ".all.mlir"
            with open(combined, "w") as f:
                f.write("\n// -----\n".join(open(n).read() for n in verified))
            groups.append((combined, verified))

    def run_pass(combined, names, pass_flag):
        """Runs `pass_flag` on every chunk of `combined` in one process:
        its output file when every chunk succeeded, None otherwise."""
        out = f"{combined}.{abs(hash(pass_flag))}.out.mlir"
        proc = run([args.ga_opt, combined, "--split-input-file", pass_flag,
                    "--verify-each=false", "--mlir-print-op-generic",
                    "-o", out])
        if proc.returncode == 0 and os.path.exists(out):
            with open(out) as f:
                produced = f.read()
            if len(re.findall(r"^// -----$", produced, re.M)) + 1 == len(names):
                return out
        if os.path.exists(out):
            os.remove(out)
        return None

    def verifies(paths):
        """Whether every module in the files `paths` verifies (one run)."""
        combined = paths[0] + ".verify.mlir"
        with open(combined, "w") as f:
            f.write("\n// -----\n".join(open(p).read() for p in paths))
        ok = run([args.ga_opt, combined, "--split-input-file",
                  "-o", os.devnull]).returncode == 0
        os.remove(combined)
        return ok

    def check_file(group):
        """Every pass on the chunks of one file: one process per pass and
        one for all outputs; chunk by chunk where that fails."""
        combined, names = group
        outputs, alone = {}, []
        for pass_flag in passes:
            out = run_pass(combined, names, pass_flag)
            if out:
                outputs[pass_flag] = out
            else:
                alone.append(pass_flag)
        if outputs and not verifies(list(outputs.values())):
            alone += [p for p, out in outputs.items() if not verifies([out])]
        for out in outputs.values():
            os.remove(out)
        return [r for pass_flag in alone for name in names
                if (r := check(name, pass_flag))]

    def check(name, pass_flag):
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

    runs = sum(len(names) for _, names in groups) * len(passes)
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        # The largest files first, so that none is left alone at the end.
        order = sorted(groups, key=lambda g: -os.path.getsize(g[0]))
        for results in pool.map(check_file, order):
            for result in results:
                failures += 1
                print(result)
    shutil.rmtree(workdir, ignore_errors=True)
    inputs = sum(len(names) for _, names in groups)
    print(f"pass-invariant: {len(passes)} passes x {inputs} inputs: "
          f"{runs - failures} of {runs} runs kept the invariant")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
