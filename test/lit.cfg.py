# -*- Python -*-
# lit configuration of the ga-opt test suite: FileCheck tests of the dialect,
# the passes, the plugin and the examples, plus the GoogleTest unit tests
# (test/unit, see its lit.local.cfg).

import re
import os
import shutil
import subprocess

import lit.formats
from lit.llvm import llvm_config
from lit.llvm.subst import ToolSubst

config.name = "GA"
config.test_format = lit.formats.ShTest(not llvm_config.use_lit_shell)
config.suffixes = [".mlir", ".test"]
config.excludes = [
    "CMakeLists.txt", "lit.cfg.py", "lit.site.cfg.py", "Inputs", "__pycache__",
    "fuzz", "sanitizers"]

config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.ga_obj_root, "test")

# A sanitized build (GA_SANITIZE=... scripts/test.sh): every report is
# fatal; LeakSanitizer skips Open MPI's own allocations; Debian's stock
# mlir-opt, which loads the sanitized plugin, needs the sanitizer runtimes
# loaded first.
mlir_opt_prefix = ""
if getattr(config, "ga_sanitize", ""):
    config.available_features.add("sanitized")
    # The sanitized suite's budget: the tests that compare compiled numbers
    # across configurations (`UNSUPPORTED: sanitize-budget`) are left to the
    # plain suite unless GA_SANITIZE_ALL=1 (docs/testing.md, "Sanitizers").
    if os.environ.get("GA_SANITIZE_ALL", "") in ("", "0"):
        config.available_features.add("sanitize-budget")
    supp = os.path.join(config.ga_src_root, "test", "sanitizers", "lsan.supp")
    # intercept_tls_get_addr=0: the sanitizer runtime's __tls_get_addr
    # interceptor takes a dynamic TLS block (libomp's, loaded by the JIT)
    # whose address happens to sit 16 bytes into a page for glibc 2.19's
    # header and reads a bogus range from it; LeakSanitizer's tracer then
    # crashes (signal 11) at exit after a correct run. Dynamic TLS is not
    # scanned for leak roots with it off; nothing of ga-opt keeps heap
    # pointers only there.
    config.environment["ASAN_OPTIONS"] = (
        "detect_leaks=1:abort_on_error=0:halt_on_error=1:"
        "intercept_tls_get_addr=0")
    config.environment["LSAN_OPTIONS"] = f"suppressions={supp}:print_suppressions=0"
    config.environment["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1"
    # Open MPI unloads its components at MPI_Finalize, which leaves their
    # allocations without a module to name (and to suppress); keep them.
    config.environment["OMPI_MCA_mca_base_component_disable_dlclose"] = "1"
    preload = []
    for runtime, name in (("address", "libasan.so"), ("undefined", "libubsan.so")):
        if runtime in config.ga_sanitize:
            path = subprocess.run(["c++", f"-print-file-name={name}"],
                                  capture_output=True, text=True).stdout.strip()
            preload.append(path)
    if preload:
        mlir_opt_prefix = "env LD_PRELOAD=" + ":".join(preload) + " "

# lit already runs one test per core: each step runs on one OpenMP thread
# unless a test asks for more (threads-bitwise.test passes --num-threads).
config.environment["OMP_NUM_THREADS"] = "1"

# The Python packages of the checkout (ga_opt, ga_import, ga_step; and
# scripts/: ga_scripts, which the tests share with the scripts, and the
# scripts that tests import), ga_opt's tools from this build, and a compile
# cache of the build's own (tests that need a fresh one set GA_OPT_CACHE to
# theirs). The one place that sets Python's path for the tests.
config.environment["PYTHONPATH"] = os.pathsep.join(
    os.path.join(config.ga_src_root, d) for d in ("python", "scripts"))
config.environment["GA_OPT_TOOLS"] = config.ga_tools_dir
config.environment["GA_OPT_CACHE"] = os.path.join(config.ga_obj_root, "test",
                                                  "ga-opt-cache")

config.substitutions.append(("%PATH%", config.environment["PATH"]))
config.substitutions.append(("%ga_src", config.ga_src_root))
config.substitutions.append(("%ga_obj", config.ga_obj_root))
config.substitutions.append(
    ("%ga_plugin", os.path.join(config.ga_lib_dir, "libGaPlugin.so")))
# Debian's stock mlir-opt, for the plugin tests.
config.substitutions.append(
    ("%mlir_opt", mlir_opt_prefix + os.path.join(config.llvm_tools_dir,
                                                 "mlir-opt")))

# The JIT runner and its support libraries, for the execution tests.
config.substitutions.append(
    ("%mlir_runner", os.path.join(config.llvm_tools_dir, "mlir-runner")))
llvm_lib_dir = os.path.join(os.path.dirname(config.llvm_tools_dir), "lib")
config.substitutions.append(
    ("%mlir_runner_utils",
     os.path.join(llvm_lib_dir, "libmlir_runner_utils.so")))
config.substitutions.append(
    ("%mlir_c_runner_utils",
     os.path.join(llvm_lib_dir, "libmlir_c_runner_utils.so")))
# The upstream passes that take linalg on tensors (and the vector.print ops
# of the execution tests, which --ga-pipeline does not lower) to the LLVM
# dialect, for the mlir-runner execution tests of single train ops.
config.substitutions.append(
    ("%lower_to_llvm",
     "--one-shot-bufferize=bufferize-function-boundaries "
     "--convert-linalg-to-loops --convert-vector-to-scf --convert-scf-to-cf "
     "--expand-strided-metadata --lower-affine --convert-vector-to-llvm "
     "--finalize-memref-to-llvm --convert-math-to-llvm "
     "--convert-arith-to-llvm --convert-index-to-llvm --convert-cf-to-llvm "
     "--convert-func-to-llvm --convert-ub-to-llvm "
     "--reconcile-unrealized-casts"))

llvm_config.use_default_substitutions()
llvm_config.with_environment("PATH", config.llvm_tools_dir, append_path=True)

tool_dirs = [config.ga_tools_dir, config.llvm_tools_dir]
tools = ["ga-opt", "ga-run", "ga-train", "ga-compile", "ga-exec", "ga-remat"]

# The rematerialization MILP needs ga-opt built with CBC.
if getattr(config, "ga_have_cbc", 0):
    config.available_features.add("cbc")
llvm_config.add_tool_substitutions(tools, tool_dirs)

# The CUDA target: compiling needs the CUDA toolkit (libdevice, ptxas);
# running needs a CUDA driver and device (`cuda-gpu`), which the GPU tests
# require, so that they report themselves unsupported elsewhere.
# The CUDA runtime's fused attention on cuDNN (libga_cudnn_attention.so),
# built where cudnn-frontend's headers are.
if getattr(config, "ga_have_cudnn_attention", 0):
    config.available_features.add("cudnn-attention")
if getattr(config, "ga_have_cuda_toolkit", 0):
    config.available_features.add("cuda-toolkit")
    config.substitutions.append(
        ("%ptxas", os.path.join(config.ga_cuda_toolkit_dir, "bin", "ptxas")))


def has_cuda_gpu():
    import ctypes
    try:
        cuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return False
    count = ctypes.c_int(0)
    return (cuda.cuInit(0) == 0 and
            cuda.cuDeviceGetCount(ctypes.byref(count)) == 0 and
            count.value > 0)


if has_cuda_gpu():
    config.available_features.add("cuda-gpu")

# The Python that runs the reference scripts: the first python3 that has
# NumPy (Debian's python3-numpy, which scripts/setup.sh installs, lives in
# /usr/bin/python3 even when another python3 comes first on PATH).

def python_with_numpy():
    for candidate in ["/usr/bin/python3", shutil.which("python3")]:
        if candidate and os.path.exists(candidate) and subprocess.run(
                [candidate, "-c", "import numpy"],
                capture_output=True).returncode == 0:
            return candidate
    return None


python = python_with_numpy() or shutil.which("python3")
if python:
    config.available_features.add("python3")
    config.substitutions.append(("%python", python))
if python_with_numpy():
    config.available_features.add("numpy")

# %sanitizer_preload: the prefix of a program that is not instrumented (Python,
# a C program) and loads the project's shared libraries (a step library
# loads libga_runtime.so). Under the sanitizers their runtimes must be
# loaded first, and the program's own allocations are not checked for leaks.
python_preload = ""
if getattr(config, "ga_sanitize", ""):
    python_preload = mlir_opt_prefix + "ASAN_OPTIONS=" + config.environment[
        "ASAN_OPTIONS"].replace("detect_leaks=1", "detect_leaks=0") + " "
config.substitutions.append(("%sanitizer_preload", python_preload))

# PyTorch (Debian's python3-torch), for the binding's DLPack path; not under
# the sanitizers (its libraries do not load after the sanitizer runtimes).
if python_with_numpy() and not getattr(config, "ga_sanitize", "") and \
        subprocess.run([python_with_numpy(), "-c", "import torch"],
                       capture_output=True).returncode == 0:
    config.available_features.add("torch")
    config.substitutions.append(("%torch_flag", "--torch"))
else:
    config.substitutions.append(("%torch_flag", ""))

# The PyTorch front end (ga-import): the virtual environment that
# scripts/setup_frontend.sh made (torch, torch-mlir, transformers, pinned).
# Not under the sanitizers, as above. Without it (no PyPI, GA_NO_FRONTEND)
# the importer's tests report themselves unsupported.
frontend = subprocess.run(
    [os.path.join(config.ga_src_root, "scripts", "setup_frontend.sh"),
     "--locate"], capture_output=True, text=True).stdout.strip()
if frontend and not getattr(config, "ga_sanitize", ""):
    config.available_features.add("torch-mlir")
    config.substitutions.append(("%frontend_python", frontend))
    # The Hugging Face Trainer needs accelerate (setup_frontend.sh's extras).
    if subprocess.run([frontend, "-c", "import accelerate"],
                      capture_output=True).returncode == 0:
        config.available_features.add("hf-trainer")

# memcheck sees the JIT-compiled step's memory accesses (the sanitizers do
# not instrument JIT code); a sanitized ga-run does not run under it.
if shutil.which("valgrind") and not getattr(config, "ga_sanitize", ""):
    config.available_features.add("valgrind")

# The format check uses Debian's clang-format-22 (scripts/setup.sh installs
# it): the version decides the output, so no other clang-format stands in.
clang_format = "/usr/lib/llvm-22/bin/clang-format"
if os.path.exists(clang_format):
    config.available_features.add("clang-format")
    config.substitutions.append(("%clang_format", clang_format))

# The text corpus of ga-train's real-data tests: Debian's fortunes package
# (scripts/setup.sh installs it).
if os.path.isdir("/usr/share/games/fortunes"):
    config.available_features.add("fortunes")

# MPI: the data-parallel tests launch ga-run under mpirun. They need a ga-run
# built with MPI and an mpirun; elsewhere they report themselves unsupported.
def mpirun_command():
    if not getattr(config, "ga_have_mpi", 0):
        return None
    mpirun = config.mpiexec if os.path.exists(config.mpiexec or "") \
        else shutil.which("mpirun")
    if not mpirun:
        return None
    version = subprocess.run([mpirun, "--version"], capture_output=True,
                             text=True)
    if re.search(r"Open ?MPI|OpenRTE", version.stdout + version.stderr):
        # 4 ranks on a 2-core machine, and CI containers that run as root.
        launcher = mpirun + " --oversubscribe --allow-run-as-root"
        return launcher
    return mpirun


mpirun = mpirun_command()
if mpirun:
    config.available_features.add("mpi")
    config.substitutions.append(("%mpirun", mpirun))
    # ga-run's data_parallel tests pass the launcher to their scripts.
    config.substitutions.append(("%quoted_mpirun", '"' + mpirun + '"'))
