"""The checkout, its build directory and tools, and the environment of a
child Python that imports ga-opt's packages."""

import os

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
PYTHON = os.path.join(ROOT, "python")
SCRIPTS = os.path.join(ROOT, "scripts")
BUILD = os.path.join(ROOT, "build")


def tool(name, build=BUILD):
    """The path of ga-opt's tool `name` (ga-opt, ga-run, ...) in `build`."""
    return os.path.join(build, "bin", name)


def child_env(*dirs, env=None):
    """`env` (default os.environ) with `dirs` first on PYTHONPATH: how a
    child Python (a `python -c` snippet, a script in a kit) finds ga_step
    or a kit's modules."""
    env = dict(os.environ if env is None else env)
    paths = [d for d in dirs if d] + [p for p in env.get(
        "PYTHONPATH", "").split(os.pathsep) if p]
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env
