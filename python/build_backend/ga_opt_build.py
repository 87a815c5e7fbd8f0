"""The PEP 517 build backend of the ga-opt Python package (pyproject.toml).

`pip install .` from a checkout builds a wheel holding the packages
ga_opt, ga_import and ga_step, and ga-opt's tools and runtimes under
ga_opt/_install (bin/ga-opt, ga-run, ga-compile, ga-train, ga-exec;
lib/libga_runtime.so, libga_cuda_runtime.so), where ga_opt.tools finds
them. The C++ is the project's own CMake build: its build directory
(`GA_OPT_BUILD_DIR`, default `build/` of the checkout) is brought up to
date with ninja, or configured and built by scripts/build.sh when it does
not exist yet (`GA_OPT_NO_BUILD=1`: the build as it is, as the test suite
takes it); `cmake --install` then writes the tools with their run path
set to the lib/ beside them (and to Debian's LLVM and MLIR, where the build
linked them).

Standard library only: no requirement is downloaded to build, so the
install works where PyPI cannot be reached. The wheel is for this machine
(its Debian LLVM 22 and MLIR 22 libraries are linked, not carried); see
docs/pytorch.md, "Installing", for what a wheel for other machines needs.
"""

import base64
import csv
import hashlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "ga_opt"
DIST = "ga-opt"
VERSION = "0.1.0"
PACKAGES = ("ga_opt", "ga_import", "ga_step")
TOOLS = ("ga-opt", "ga-run", "ga-compile", "ga-train", "ga-exec")
SOURCE = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))

METADATA = f"""Metadata-Version: 2.1
Name: {DIST}
Version: {VERSION}
Summary: Exact gradient accumulation and data parallelism: a PyTorch model's whole training step compiled by ga-opt (MLIR 22)
Requires-Python: >=3.9
Requires-Dist: numpy
"""


def _log(message):
    print(f"ga-opt build: {message}", file=sys.stderr, flush=True)


def _build_tree():
    """The CMake build directory, up to date; its path."""
    build = os.environ.get("GA_OPT_BUILD_DIR") or os.path.join(SOURCE,
                                                              "build")
    if os.environ.get("GA_OPT_NO_BUILD"):
        missing = [t for t in TOOLS
                   if not os.path.exists(os.path.join(build, "bin", t))]
        if missing:
            raise RuntimeError(f"GA_OPT_NO_BUILD: {build} has no "
                               f"{', '.join(missing)}: build it first "
                               "(scripts/build.sh)")
        _log(f"using {build} as it is (GA_OPT_NO_BUILD)")
    elif os.path.exists(os.path.join(build, "build.ninja")):
        _log(f"bringing {build} up to date (ninja)")
        subprocess.run(["ninja", "-C", build, *TOOLS, "ga_runtime",
                        "ga_cuda_runtime"], check=True,
                       stdout=sys.stderr)
    else:
        _log(f"no build in {build}: running scripts/build.sh")
        subprocess.run([os.path.join(SOURCE, "scripts", "build.sh")],
                       check=True, stdout=sys.stderr,
                       env={**os.environ, "GA_BUILD_DIR": build})
    return build


def _tag():
    """The wheel's tag: any Python 3, this platform (the tools are
    native)."""
    platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
    return f"py3-none-{platform}"


def _files(stage):
    """(path in the wheel, path on disk) of everything the wheel holds."""
    for package in PACKAGES:
        root = os.path.join(SOURCE, "python", package)
        for directory, dirs, names in os.walk(root):
            dirs[:] = [d for d in dirs if d != "__pycache__"]
            for name in sorted(names):
                if name.endswith((".py", ".md")):
                    path = os.path.join(directory, name)
                    yield (os.path.relpath(path, os.path.join(SOURCE,
                                                              "python")),
                           path)
    for directory, _, names in os.walk(stage):
        for name in sorted(names):
            path = os.path.join(directory, name)
            yield (os.path.join(NAME, "_install",
                                os.path.relpath(path, stage)), path)


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest())
    return [arcname, "sha256=" + digest.rstrip(b"=").decode(),
            str(len(data))]


def build_wheel(wheel_directory, config_settings=None,
                metadata_directory=None):
    build = _build_tree()
    stage = tempfile.mkdtemp(prefix="ga-opt-install-")
    try:
        _log(f"installing the tools and runtimes from {build}")
        subprocess.run(["cmake", "--install", build, "--prefix", stage],
                       check=True, stdout=sys.stderr)
        for extra in ("include", "share"):
            shutil.rmtree(os.path.join(stage, extra), ignore_errors=True)
        wheel = f"{NAME}-{VERSION}-{_tag()}.whl"
        info = f"{NAME}-{VERSION}.dist-info"
        records = []
        path = os.path.join(wheel_directory, wheel)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            for arcname, source in _files(stage):
                with open(source, "rb") as f:
                    data = f.read()
                entry = zipfile.ZipInfo(arcname)
                entry.external_attr = os.stat(source).st_mode << 16
                entry.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(entry, data)
                records.append(_record_line(arcname, data))
            meta = {
                "METADATA": METADATA,
                "WHEEL": ("Wheel-Version: 1.0\nGenerator: ga_opt_build\n"
                          f"Root-Is-Purelib: false\nTag: {_tag()}\n"),
                "top_level.txt": "".join(p + "\n" for p in PACKAGES),
            }
            for name, text in meta.items():
                data = text.encode()
                z.writestr(f"{info}/{name}", data)
                records.append(_record_line(f"{info}/{name}", data))
            out = io.StringIO()
            writer = csv.writer(out, lineterminator="\n")
            writer.writerows(records + [[f"{info}/RECORD", "", ""]])
            z.writestr(f"{info}/RECORD", out.getvalue())
        _log(f"wrote {wheel} ({os.path.getsize(path)} bytes)")
        return wheel
    finally:
        shutil.rmtree(stage, ignore_errors=True)


def build_sdist(sdist_directory, config_settings=None):
    """The checkout's tracked files (git ls-files) as a source archive."""
    files = subprocess.run(["git", "-C", SOURCE, "ls-files", "-z"],
                           check=True, capture_output=True).stdout
    base = f"{DIST}-{VERSION}"
    name = f"{base}.tar.gz"
    with tarfile.open(os.path.join(sdist_directory, name), "w:gz") as tar:
        for path in files.decode().split("\0"):
            if path and os.path.exists(os.path.join(SOURCE, path)):
                tar.add(os.path.join(SOURCE, path),
                        arcname=os.path.join(base, path), recursive=False)
        data = METADATA.encode()
        entry = tarfile.TarInfo(os.path.join(base, "PKG-INFO"))
        entry.size = len(data)
        tar.addfile(entry, io.BytesIO(data))
    return name


def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []
