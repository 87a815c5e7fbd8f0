"""Where ga-opt's tools are, and which compiler they are.

The tools (ga-opt, ga-run, ga-compile) are looked for, in order:
`GA_OPT_TOOLS` (a directory holding them), the tree that `pip install`
put beside this package (`ga_opt/_install/bin`), the build of the checkout
this package lies in (`build/bin`), then `PATH`.
"""

import functools
import hashlib
import os
import shutil

from .errors import GaOptError

TOOLS = ("ga-opt", "ga-run", "ga-compile")
_HERE = os.path.dirname(os.path.abspath(__file__))


def _candidates():
    env = os.environ.get("GA_OPT_TOOLS")
    if env:
        yield env, "GA_OPT_TOOLS"
    yield os.path.join(_HERE, "_install", "bin"), "the installed package"
    yield (os.path.join(os.path.dirname(os.path.dirname(_HERE)), "build",
                        "bin"), "the checkout's build")


@functools.lru_cache(maxsize=None)
def tool_dir():
    """The directory of the tools; GaOptError naming every place looked in
    when none holds all of them."""
    looked = []
    for directory, what in _candidates():
        if all(os.access(os.path.join(directory, t), os.X_OK)
               for t in TOOLS):
            return directory
        looked.append(f"{directory} ({what})")
    on_path = [shutil.which(t) for t in TOOLS]
    if all(on_path):
        return os.path.dirname(on_path[0])
    raise GaOptError(
        f"ga-opt's tools ({', '.join(TOOLS)}) are not found: looked in "
        f"{'; '.join(looked)} and on PATH. Install the package with "
        "`pip install .` from a checkout whose build is done "
        "(scripts/build.sh), or set GA_OPT_TOOLS to a directory holding "
        "them")


def tool(name):
    """The path of one of the tools."""
    return os.path.join(tool_dir(), name)


@functools.lru_cache(maxsize=None)
def compiler_version():
    """A digest of the compiler: the tools' and the runtime's bytes and the
    Python packages that write the step (ga_opt, ga_import). A rebuilt
    compiler is another compiler, whatever its version number."""
    h = hashlib.sha256()
    directory = tool_dir()
    files = [os.path.join(directory, t) for t in TOOLS]
    lib = os.path.join(os.path.dirname(directory), "lib", "libga_runtime.so")
    if os.path.exists(lib):
        files.append(lib)
    import ga_import
    for package in (_HERE, os.path.dirname(ga_import.__file__)):
        for name in sorted(os.listdir(package)):
            if name.endswith(".py"):
                files.append(os.path.join(package, name))
    for path in files:
        h.update(os.path.basename(path).encode())
        with open(path, "rb") as f:
            h.update(f.read())
    return h.hexdigest()[:16]
