"""Runs the commands of the README and the guides as a new user would.

Every fenced `sh`, `bash` or `python` block of README.md and docs/*.md
carries a marker on the line before it:

    <!-- snippet: run -->                            run it
    <!-- snippet: run (python, outside the checkout) -->
    <!-- snippet: not run: REASON -->                say why not

A block without one fails this test (naming its file and line), so a new
snippet is either run or explained. Every relative link of those files
must name a file that exists and, with `#anchor`, one of its headings. Blocks of only comments (an output
shown as `# ...`) need no marker.

How they run: `sh` blocks with bash (-e -o pipefail) from the checkout's
root, in the order of their file; `python` blocks with the front end's
python, from the checkout with PYTHONPATH=python, or "outside the
checkout" from an empty directory without PYTHONPATH (the installed
ga_opt). The environment is a fresh machine's after the setup:

- the first `python3` on PATH is a bare Python without NumPy (a pyenv 3.11
  as a new user may have): a snippet must name the Python it needs;
- `scripts/setup_frontend.sh --locate` prints the python of a throwaway
  environment (GA_FRONTEND_PYTHON) layered over the front end's, so that
  `$PY -m pip install .` installs there, not into the shared one; the
  package is installed into it before the snippets run, as the README
  says to;
- a compile cache of its own (GA_OPT_CACHE).

  snippets.py --workdir DIR [--only FILE]
"""

import argparse
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
MARKER = re.compile(r"<!--\s*snippet:\s*(run(?: \(python, outside the "
                    r"checkout\))?|not run:\s*(.+?))\s*-->")
FAILED = []


def report(name, ok, detail):
    print(f"{'PASS' if ok else 'FAIL'}: {name}: {detail}", flush=True)
    if not ok:
        FAILED.append(name)


def blocks(path):
    """(line, language, text, marker or None) of every fenced block."""
    lines = open(path).read().splitlines()
    found, i = [], 0
    while i < len(lines):
        m = re.match(r"^```(\w*)\s*$", lines[i])
        if not m:
            i += 1
            continue
        start, language = i, m.group(1)
        i += 1
        body = []
        while i < len(lines) and not lines[i].startswith("```"):
            body.append(lines[i])
            i += 1
        i += 1
        prev = start - 1
        while prev >= 0 and not lines[prev].strip():
            prev -= 1
        marker = MARKER.search(lines[prev]) if prev >= 0 else None
        found.append((start + 1, language, "\n".join(body) + "\n", marker))
    return found


def anchor(heading):
    """GitHub's anchor of a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def check_links(files):
    """Every relative link resolves: its file, and its heading's anchor."""
    headings, bad, count = {}, [], 0
    for path in files:
        text = open(path).read()
        text = re.sub(r"```.*?```", "", text, flags=re.S)
        for target in re.findall(r"\]\(([^)\s]+)\)", text):
            if re.match(r"[a-z]+:", target):
                continue
            count += 1
            file, _, name = target.partition("#")
            full = os.path.normpath(os.path.join(os.path.dirname(path), file)) \
                if file else path
            if not os.path.exists(full):
                bad.append(f"{os.path.relpath(path, ROOT)}: {target} (no file)")
                continue
            if name and full.endswith(".md"):
                if full not in headings:
                    headings[full] = {anchor(h) for h in re.findall(
                        r"^#+ (.*)$", open(full).read(), re.M)}
                if name not in headings[full]:
                    bad.append(f"{os.path.relpath(path, ROOT)}: {target} (no "
                               "such heading)")
    report("links", not bad, f"{count} relative links"
           + ("; broken: " + "; ".join(bad) if bad else ", all resolve"))


def only_comments(text):
    return all(not l.strip() or l.lstrip().startswith("#")
               for l in text.splitlines())


def environment(workdir, frontend):
    """PATH with a bare python3 first, the throwaway front end, a cache."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "GA_OPT_TOOLS")}
    bare = os.path.join(workdir, "bare")
    if not os.path.exists(bare):
        subprocess.run(["/usr/bin/python3", "-m", "venv", "--without-pip",
                        bare], check=True)
    layered = os.path.join(workdir, "frontend")
    if not os.path.exists(layered):
        subprocess.run([frontend, "-m", "venv", "--without-pip", layered],
                       check=True)
        purelib = subprocess.run(
            [os.path.join(layered, "bin", "python"), "-c",
             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True).stdout.strip()
        shared = subprocess.run(
            [frontend, "-c",
             "import sysconfig; print(sysconfig.get_paths()['purelib'])"],
            check=True, capture_output=True, text=True).stdout.strip()
        with open(os.path.join(purelib, "frontend.pth"), "w") as f:
            f.write(shared + "\n")
    env["PATH"] = os.path.join(bare, "bin") + os.pathsep + env["PATH"]
    env["GA_FRONTEND_PYTHON"] = os.path.join(layered, "bin", "python")
    env["GA_OPT_CACHE"] = os.path.join(workdir, "cache")
    env["HF_HUB_OFFLINE"] = "1"
    return env


def run_block(path, line, language, text, outside, env, workdir):
    name = f"{os.path.relpath(path, ROOT)}:{line}"
    start = time.perf_counter()
    if language == "python":
        script = os.path.join(workdir, f"snippet_{line}.py")
        with open(script, "w") as f:
            f.write(text)
        run_env = dict(env)
        cwd = os.path.join(workdir, "elsewhere") if outside else ROOT
        os.makedirs(cwd, exist_ok=True)
        if not outside:
            run_env["PYTHONPATH"] = os.path.join(ROOT, "python")
        command = [env["GA_FRONTEND_PYTHON"], script]
    else:
        cwd, run_env = ROOT, env
        command = ["bash", "-e", "-o", "pipefail", "-c", text]
    try:
        done = subprocess.run(command, cwd=cwd, env=run_env,
                              capture_output=True, text=True, timeout=600)
        ok, out = done.returncode == 0, done.stdout + done.stderr
        status = f"exit status {done.returncode}"
    except subprocess.TimeoutExpired:
        ok, out, status = False, "", "timed out after 600 s"
    seconds = time.perf_counter() - start
    tail = "" if ok else "\n" + "\n".join(
        "    " + l for l in out.strip().splitlines()[-15:])
    report(name, ok, f"{language or 'sh'} block, {status}, {seconds:.1f} s"
           + tail)


def main():
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--workdir", required=True)
    parser.add_argument("--only")
    args = parser.parse_args()
    os.makedirs(args.workdir, exist_ok=True)
    workdir = os.path.abspath(args.workdir)
    frontend = subprocess.run(
        [os.path.join(ROOT, "scripts", "setup_frontend.sh"), "--locate"],
        capture_output=True, text=True,
        env={k: v for k, v in os.environ.items()
             if k != "GA_FRONTEND_PYTHON"}).stdout.strip()
    if not frontend:
        print("snippets: no front-end environment (scripts/setup_frontend.sh)")
        return 1
    env = environment(workdir, frontend)
    done = subprocess.run(
        [env["GA_FRONTEND_PYTHON"], "-m", "pip", "install", "-q",
         "--disable-pip-version-check", "."], cwd=ROOT, env=env,
        capture_output=True, text=True)
    report("pip install .", done.returncode == 0,
           "into the throwaway front end"
           + ("" if done.returncode == 0 else ": " + done.stderr[-2000:]))
    files = [os.path.join(ROOT, "README.md")] + sorted(
        os.path.join(ROOT, "docs", f) for f in os.listdir(
            os.path.join(ROOT, "docs")) if f.endswith(".md"))
    check_links(files)
    counts = {"run": 0, "not run": 0}
    for path in files:
        rel = os.path.relpath(path, ROOT)
        if args.only and rel != args.only:
            continue
        for line, language, text, marker in blocks(path):
            if language not in ("sh", "bash", "python") or \
                    only_comments(text):
                continue
            if marker is None:
                report(f"{rel}:{line}", False,
                       f"a {language} block without a snippet marker "
                       "(<!-- snippet: run --> or <!-- snippet: not run: "
                       "REASON -->)")
                continue
            if marker.group(2):
                counts["not run"] += 1
                print(f"not run: {rel}:{line}: {marker.group(2)}")
                continue
            counts["run"] += 1
            run_block(path, line, language, text,
                      "outside" in marker.group(1), env, workdir)
    print(f"snippets: {counts['run']} run, {counts['not run']} not run "
          f"(with a reason), {len(FAILED)} failed")
    return 1 if FAILED else 0


if __name__ == "__main__":
    sys.exit(main())
