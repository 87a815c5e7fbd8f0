"""Several ranks: compile_step(data_parallel=r) under `mpirun -np r`.

Every rank runs the same program and calls compile_step with the same
global batch; the step takes its rank's rows (as ga-run and ga-train do).
Rank 0 exports, imports, checks and compiles the step; the other ranks wait
for it in an MPI broadcast of the library's path (or of rank 0's error) and
load the same library, so the compiler runs once, and a refusal stops
every rank with the same message.

The MPI run is joined through ga-opt's runtime (libga_runtime.so, the
library that every step library links): `ga_collectives_start`, the
broadcast and the all-gather that the sharded state needs
(`ga_broadcast_bytes`, `ga_all_gather_bytes`), through ctypes as ga_step
calls a step library.
"""

import contextlib
import ctypes
import os
import sys

import numpy as np

import ga_step

from .errors import GaOptError
from .tools import tool_dir

# What Open MPI, MPICH and PMIx tell a process that mpirun started
# (the runtime's own test, Collectives.cpp's launchedByMPI).
_SIZE_VARIABLES = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE")
_RANK_VARIABLES = ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK")
_LAUNCH_PREFIXES = ("OMPI_", "PMIX_", "PMI_")


def launched():
    """(rank, size) of this process in an mpirun launch, or None."""
    size = next((os.environ[v] for v in _SIZE_VARIABLES if v in os.environ),
                None)
    rank = next((os.environ[v] for v in _RANK_VARIABLES if v in os.environ),
                None)
    if size is None and rank is None:
        return None
    try:
        return int(rank or 0), int(size or 1)
    except ValueError:
        return None


def check_launch(data_parallel, program=None):
    """GaOptError unless this process was started by mpirun with
    `data_parallel` ranks (or, for one rank, not by mpirun)."""
    if program is None:
        script = sys.argv[0] if sys.argv and sys.argv[0] else "TRAIN.py"
        program = f"python3 {script}"
    where = launched()
    command = f"`mpirun -np {data_parallel} {program}`"
    if data_parallel > 1 and where is None:
        raise GaOptError(f"data_parallel={data_parallel}: the step runs on "
                         f"{data_parallel} ranks; launch the program with "
                         f"{command} (every rank calls compile_step with "
                         "the same global batch)")
    if where is not None and where[1] != data_parallel:
        if data_parallel == 1:
            raise GaOptError(f"mpirun started {where[1]} ranks but the step "
                             "runs on one (data_parallel=1): pass "
                             f"data_parallel={where[1]}, or run without "
                             "mpirun")
        raise GaOptError(f"data_parallel={data_parallel}, but mpirun "
                         f"started {where[1]} ranks: launch it with "
                         f"{command}")


@contextlib.contextmanager
def without_launch_environment():
    """The tools that rank 0 runs (ga-run for the import's check,
    ga-compile) are single processes: mpirun's variables, which they would
    take for a launch of their own, are hidden from them meanwhile."""
    saved = {k: v for k, v in os.environ.items()
             if k.startswith(_LAUNCH_PREFIXES)}
    for k in saved:
        del os.environ[k]
    try:
        yield
    finally:
        os.environ.update(saved)


class Runtime:
    """The MPI run, joined through libga_runtime.so (beside the tools)."""

    def __init__(self, ranks, program="python3"):
        path = os.path.join(os.path.dirname(tool_dir()), "lib",
                            "libga_runtime.so")
        try:
            self._lib = ctypes.CDLL(path)
        except OSError as e:
            raise GaOptError(f"cannot load ga-opt's runtime '{path}': {e}") \
                from None
        lib = self._lib
        lib.ga_collectives_start.restype = ctypes.c_int32
        lib.ga_collectives_start.argtypes = [
            ctypes.c_int64, ctypes.c_char_p, ctypes.c_char_p,
            ctypes.POINTER(ga_step._Status)]
        lib.ga_world_rank.restype = ctypes.c_int32
        lib.ga_world_size.restype = ctypes.c_int32
        lib.ga_broadcast_bytes.restype = ctypes.c_int32
        lib.ga_broadcast_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int64]
        lib.ga_all_gather_bytes.restype = ctypes.c_int32
        lib.ga_all_gather_bytes.argtypes = [ctypes.c_void_p, ctypes.c_int64,
                                            ctypes.c_void_p]
        status = ga_step._Status()
        if lib.ga_collectives_start(ranks, b"step", program.encode(),
                                    ctypes.byref(status)):
            raise GaOptError(status.message.decode())
        # MPI_Finalize at exit (once per process, with the step libraries').
        ga_step._leave_at_exit(lib)
        self.rank = lib.ga_world_rank()
        self.size = lib.ga_world_size()

    def broadcast_text(self, text=None):
        """Rank 0's `text` on every rank (a string; None elsewhere)."""
        data = (text or "").encode() if self.rank == 0 else b""
        length = ctypes.c_int64(len(data))
        if self._lib.ga_broadcast_bytes(ctypes.byref(length), 8):
            raise GaOptError("the broadcast from rank 0 failed")
        buffer = ctypes.create_string_buffer(data, max(length.value, 1))
        if length.value and self._lib.ga_broadcast_bytes(buffer,
                                                         length.value):
            raise GaOptError("the broadcast from rank 0 failed")
        return buffer.raw[:length.value].decode()

    def all_gather(self, array):
        """Every rank's `array` (a NumPy array of the same shape and dtype
        on every rank), stacked: shape (ranks, *array.shape)."""
        array = np.ascontiguousarray(array)
        out = np.empty((self.size, *array.shape), dtype=array.dtype)
        if self._lib.ga_all_gather_bytes(array.ctypes.data, array.nbytes,
                                         out.ctypes.data):
            raise GaOptError("the all-gather across ranks failed")
        return out


_RUNTIME = None


def runtime(ranks):
    """The process's Runtime (joined once)."""
    global _RUNTIME
    if _RUNTIME is None:
        _RUNTIME = Runtime(ranks)
    return _RUNTIME
