"""The invariant every ga-opt pass keeps: run alone on any input that
verifies, a pass either produces IR that verifies (checked by parsing its
output again) or fails with an error of its own. Never a crash, never an
invalid module reported as success.

The inputs are every chunk (split at `// -----`) of every .mlir file under
the test directories and the examples that ga-opt parses and verifies as it
is; the passes are every ga-opt pass that `ga-opt --help` lists (train-*,
ga-*, convert-train-*, test-train-*), a few with their options, and the
whole pipeline.

Each pass runs on all verifying chunks of all files in one process
(`--split-input-file`: each chunk its own module in its own context, as
when run alone), and its output verifies in one more: ga-opt's start-up,
not the passes, was most of the time when every chunk (or every file) had
processes of its own, above all under the sanitizers. Where that run
fails, the verdict is still per chunk:
- a chunk that the pass refuses is named by its error's line (the chunks'
  lines are known in the combined input), and the run repeats on the
  chunks left;
- a crash, a failure without an error that names a chunk, or an output
  that does not verify halves the set, down to a single chunk, which is
  judged alone: a refusal must print an error, success must give an output
  that verifies.

  pass_invariant.py --ga-opt GA_OPT --root SRC [--jobs N]
"""

import argparse
import concurrent.futures
import itertools
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

MARKER = "// -----"


def chunks(path):
    with open(path) as f:
        text = f.read()
    return [c for c in re.split(r"^// -----\s*$", text, flags=re.M)
            if c.strip()]


def run(cmd):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=900)


class Checker:
    """Runs ga-opt on sets of chunks, each chunk a (label, text) pair."""

    def __init__(self, ga_opt, workdir):
        self.ga_opt = ga_opt
        self.workdir = workdir
        self.counter = itertools.count()

    def write(self, items):
        """The chunks of `items` in one file: its path, and each chunk's
        first and last line in it."""
        path = os.path.join(self.workdir, f"set{next(self.counter)}.mlir")
        spans, line = [], 1
        with open(path, "w") as f:
            for i, (_, text) in enumerate(items):
                if i:
                    f.write(f"\n{MARKER}\n")
                    line += 2
                f.write(text)
                end = line + text.count("\n")
                spans.append((line, end))
                line = end
        return path, spans

    @staticmethod
    def refused(stderr, path, spans):
        """The indices of the chunks that an error of `stderr` names, and
        whether every error named one."""
        named, all_named = set(), True
        for match in re.finditer(r"^(.*?):(\d+):\d+: error:", stderr, re.M):
            line = int(match.group(2))
            index = next((i for i, (first, last) in enumerate(spans)
                          if first <= line <= last), None)
            if match.group(1) != path or index is None:
                all_named = False
            else:
                named.add(index)
        return named, all_named

    def verifying(self, items):
        """The chunks of `items` that parse and verify as they are."""
        if not items:
            return []
        path, spans = self.write(items)
        proc = run([self.ga_opt, path, "--split-input-file", "-o", os.devnull])
        os.remove(path)
        if proc.returncode == 0:
            return items
        named, _ = self.refused(proc.stderr, path, spans)
        if named:
            return self.verifying(
                [c for i, c in enumerate(items) if i not in named])
        if len(items) == 1:
            return []
        mid = len(items) // 2
        return self.verifying(items[:mid]) + self.verifying(items[mid:])

    def check(self, pass_flag, items):
        """The invariant for `pass_flag` on every chunk of `items`: the
        list of failures, each a FAIL line naming its chunk."""
        if not items:
            return []
        if len(items) == 1:
            return self.check_alone(pass_flag, items[0])
        path, spans = self.write(items)
        out = path + ".out.mlir"
        proc = run([self.ga_opt, path, "--split-input-file", pass_flag,
                    "--verify-each=false", "--mlir-print-op-generic",
                    "-o", out])
        os.remove(path)
        if proc.returncode == 0 and os.path.exists(out):
            with open(out) as f:
                sections = len(re.findall(r"^// -----$", f.read(), re.M)) + 1
            again = run([self.ga_opt, out, "--split-input-file",
                         "-o", os.devnull])
            os.remove(out)
            if sections == len(items) and again.returncode == 0:
                return []
        elif os.path.exists(out):
            os.remove(out)
        if proc.returncode == 1:
            named, _ = self.refused(proc.stderr, path, spans)
            if named:
                return self.check(
                    pass_flag, [c for i, c in enumerate(items) if i not in named])
        mid = len(items) // 2
        return (self.check(pass_flag, items[:mid]) +
                self.check(pass_flag, items[mid:]))

    def check_alone(self, pass_flag, item):
        label, text = item
        path, _ = self.write([item])
        # The module goes to a file: some passes print reports to stdout.
        out = path + ".out.mlir"
        proc = run([self.ga_opt, path, pass_flag, "--verify-each=false",
                    "--mlir-print-op-generic", "-o", out])
        os.remove(path)
        name = f"{label} {pass_flag}"
        if proc.returncode < 0 or proc.returncode > 1:
            return [f"FAIL {name}: exit {proc.returncode} (crash)\n"
                    f"{proc.stderr[-2000:]}"]
        if proc.returncode == 1:
            if "error:" not in proc.stderr:
                return [f"FAIL {name}: failed without an error\n"
                        f"{proc.stderr[-2000:]}"]
            return []
        again = run([self.ga_opt, out, "-o", os.devnull])
        os.remove(out)
        if again.returncode != 0:
            return [f"FAIL {name}: reported success but its output does not "
                    f"verify:\n{again.stderr[-2000:]}"]
        return []


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
    items = []
    for path in sorted(files):
        rel = os.path.relpath(path, args.root)
        items += [(f"{rel}#{i}", chunk)
                  for i, chunk in enumerate(chunks(path))]

    workdir = tempfile.mkdtemp(prefix="pass-invariant-")
    checker = Checker(args.ga_opt, workdir)
    # Only inputs that parse and verify as they are.
    items = checker.verifying(items)
    runs = len(items) * len(passes)
    failures = 0
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as pool:
        # The whole pipeline first, so that it is not left alone at the end.
        order = sorted(passes, key=lambda p: not p.startswith("--ga-pipeline"))
        for results in pool.map(lambda p: checker.check(p, items), order):
            for result in results:
                failures += 1
                print(result)
    shutil.rmtree(workdir, ignore_errors=True)
    print(f"pass-invariant: {len(passes)} passes x {len(items)} inputs: "
          f"{runs - failures} of {runs} runs kept the invariant")
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
