"""Call a training step compiled by ga-compile from Python.

    import ga_step
    step = ga_step.load("libstep.so")
    loss, grads, aux = step(w, x, y)

The library's recorded signature (``step.signature``) gives the dtype and
shape of every argument and result; arguments are checked against it with
the messages of ga-run and ga-exec. Arguments may be NumPy arrays or any
object NumPy can read without copying through the buffer protocol or DLPack
(a CPU ``torch.Tensor``, for example); they are made C-contiguous when they
are not. Results are new NumPy arrays, or written into ``out=`` arrays that
a training loop passes at every step.

A step compiled for CUDA also takes device arrays, arguments and ``out=``
alike: any object with ``__cuda_array_interface__`` (a CUDA
``torch.Tensor`` detached from autograd, a CuPy array), C-contiguous, on
the device the step runs on. Their data stays on the device: the step
copies device to device, and the host waits for the device before the
step reads them (the producer may run on another stream). Results are
host arrays unless ``out=`` gives device arrays.

A step imported from PyTorch (ga-import) records its parameters' names
(the module's state_dict keys): ``step.input_names`` lists them, and
``step.arguments(named)`` orders a dict of them (``model.state_dict()``
and the batch's tensors, by name) as the step takes them.

Standard library (ctypes) and NumPy only.
"""

import atexit
import ctypes
import os

import numpy as np

__all__ = ["load", "Step", "StepError", "Signature", "Tensor"]

# The newest signature text this binding reads (ga_step.h); version 1, the
# text of a step without argument names, is read too.
ABI_VERSION = 2

_DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32,
           "i64": np.int64, "i1": np.bool_}
_NUMPY_NAMES = {"f32": "float32", "f64": "float64", "i32": "int32",
                "i64": "int64", "i1": "bool"}


class StepError(RuntimeError):
    """A bad argument, a malformed library or a runtime error of the step
    (``code`` is the C ABI's error code; 0 for errors found in Python)."""

    def __init__(self, message, code=0):
        super().__init__(message)
        self.code = code


class _Status(ctypes.Structure):
    _fields_ = [("code", ctypes.c_int32), ("message", ctypes.c_char * 1024)]


class Tensor:
    """One argument or result: dtype token (f32, ...), shape, role."""

    def __init__(self, dtype, shape, role="aux", name=None):
        self.dtype, self.shape, self.role = dtype, tuple(shape), role
        self.name = name

    @property
    def numpy_dtype(self):
        return np.dtype(_DTYPES[self.dtype])

    def describe(self):
        """As ga-run prints it: tensor<4x3xf32> (float32 (4, 3))."""
        dims = "".join(f"{d}x" for d in self.shape)
        return (f"tensor<{dims}{self.dtype}> ({_NUMPY_NAMES[self.dtype]} "
                f"{_shape_string(self.shape)})")

    def __repr__(self):
        named = f", {self.name!r}" if self.name else ""
        return f"Tensor({self.dtype}, {self.shape}, {self.role}{named})"


class Signature:
    """The parsed text of ga_step_signature() (format: ga_step.h)."""

    def __init__(self, text):
        self.text = text
        self.entry = None
        self.ranks = 1
        self.inputs, self.results = [], []
        lines = [l.split() for l in text.splitlines() if l.strip()]
        if not lines or len(lines[0]) != 2 or lines[0][0] != "ga-step":
            raise StepError("malformed step signature: expected 'ga-step "
                            "VERSION' first", 4)
        if lines[0][1] not in [str(v) for v in range(1, ABI_VERSION + 1)]:
            raise StepError(f"step signature version {lines[0][1]}, this "
                            f"binding reads versions 1 to {ABI_VERSION}: "
                            "recompile the step with this ga-compile", 4)
        named = lines[0][1] != "1"
        for fields in lines[1:]:
            kind = fields[0]
            if kind == "entry" and len(fields) == 2:
                self.entry = fields[1]
            elif kind == "ranks" and len(fields) == 2:
                self.ranks = int(fields[1])
            elif kind == "name" and named and len(fields) == 3:
                # Names an input listed before it, once.
                listed = fields[1].isdigit() and \
                    int(fields[1]) < len(self.inputs)
                if not listed or self.inputs[int(fields[1])].name is not None:
                    raise StepError("malformed step signature line: "
                                    + " ".join(fields), 4)
                self.inputs[int(fields[1])].name = fields[2]
            elif kind in ("input", "result"):
                target = self.inputs if kind == "input" else self.results
                if len(fields) != (4 if kind == "input" else 5) or \
                        int(fields[1]) != len(target) or \
                        fields[2] not in _DTYPES:
                    raise StepError("malformed step signature line: "
                                    + " ".join(fields), 4)
                shape = () if fields[3] == "scalar" else tuple(
                    int(d) for d in fields[3].split("x"))
                role = fields[4] if kind == "result" else "input"
                target.append(Tensor(fields[2], shape, role))
            else:
                raise StepError("malformed step signature line: "
                                + " ".join(fields), 4)
        if self.entry is None:
            raise StepError("malformed step signature: no 'entry' record", 4)

    @property
    def input_names(self):
        """Each input's name (None where it has none)."""
        return [t.name for t in self.inputs]

    @property
    def loss_index(self):
        for i, r in enumerate(self.results):
            if r.role == "loss":
                return i
        return None


def _shape_string(shape):
    if len(shape) == 1:
        return f"({shape[0]},)"
    return "(" + ", ".join(str(d) for d in shape) + ")"


class _DeviceArray:
    """A device buffer that `value` describes by __cuda_array_interface__
    (kept alive with it)."""

    def __init__(self, value):
        face = value.__cuda_array_interface__
        self.value = value
        self.shape = tuple(face["shape"])
        self.dtype = np.dtype(face["typestr"])
        self.pointer, self.readonly = face["data"]
        dense = []
        stride = self.dtype.itemsize
        for d in reversed(self.shape):
            dense.insert(0, stride)
            stride *= d
        strides = face.get("strides")
        self.contiguous = strides is None or all(
            d == 1 or a == b for d, a, b in zip(self.shape, strides, dense))


def _is_device_array(value):
    try:
        return hasattr(value, "__cuda_array_interface__")
    except Exception:  # e.g. a tensor that requires grad raises here
        return True


def _device_array(value, what):
    try:
        return _DeviceArray(value)
    except Exception as e:
        raise StepError(f"{what}: a device array whose "
                        f"__cuda_array_interface__ cannot be read ({e}; a "
                        "torch.Tensor that requires grad needs .detach())"
                        ) from None


def _as_array(value):
    """A NumPy view of `value` (an ndarray, a buffer, a DLPack tensor)."""
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (TypeError, RuntimeError, AttributeError):
            pass
    if hasattr(value, "numpy"):  # torch.Tensor on the CPU without DLPack
        return value.numpy()
    return np.asarray(value)


_LEAVING = []


def _leave_at_exit(lib):
    """Leaves the MPI run (MPI_Finalize, once: ga_collectives_stop does
    nothing where the process joined none) when Python exits; mpirun
    reports a rank that exits without it as failed."""
    if not _LEAVING:
        stop = lib.ga_collectives_stop
        stop.restype, stop.argtypes = None, []
        _LEAVING.append(stop)
        atexit.register(stop)


class Step:
    """A loaded step library. Call it with the step's arguments."""

    def __init__(self, path):
        self.path = path
        try:
            self._lib = ctypes.CDLL(os.path.abspath(path))
        except OSError as e:
            raise StepError(f"cannot load '{path}': {e}") from None
        try:
            sig_fn = self._lib.ga_step_signature
            self._run = self._lib.ga_step_run
        except AttributeError:
            raise StepError(f"'{path}' is not a step library (it exports no "
                            "ga_step_signature and ga_step_run): build one "
                            "with ga-compile") from None
        sig_fn.restype = ctypes.c_char_p
        sig_fn.argtypes = []
        # A step compiled for CUDA calls the CUDA runtime's entry.
        self.on_device = hasattr(self._lib, "ga_cuda_step_enter")
        self._run.restype = ctypes.c_int32
        self._run.argtypes = [ctypes.POINTER(ctypes.c_void_p),
                              ctypes.POINTER(ctypes.c_void_p),
                              ctypes.POINTER(_Status)]
        self.signature = Signature(sig_fn().decode())
        self.name = self.signature.entry
        self.input_names = self.signature.input_names
        # Join the MPI run for a data-parallel library (or under mpirun);
        # the runtime reports a wrong world size.
        start = self._lib.ga_collectives_start
        start.restype = ctypes.c_int32
        start.argtypes = [ctypes.c_int64, ctypes.c_char_p, ctypes.c_char_p,
                          ctypes.POINTER(_Status)]
        status = _Status()
        if start(self.signature.ranks, self.name.encode(), b"python3",
                 ctypes.byref(status)) != 0:
            raise StepError(status.message.decode(), status.code)
        _leave_at_exit(self._lib)

    def arguments(self, named):
        """The step's arguments in order, taken by name from the mapping
        `named` (a state_dict, the batch's tensors by name); unnamed inputs
        cannot be given so. Raises StepError naming every input that
        `named` lacks, and every name of `named` the step does not take."""
        if None in self.input_names:
            missing = [i for i, n in enumerate(self.input_names) if n is None]
            raise StepError(f"@{self.name} has unnamed input(s) "
                            f"#{', #'.join(map(str, missing))}: pass its "
                            "arguments in order")
        lacking = [n for n in self.input_names if n not in named]
        extra = [n for n in named if n not in self.input_names]
        if lacking or extra:
            raise StepError(
                f"@{self.name}: "
                + (f"no value for {', '.join(lacking)}" if lacking else "")
                + ("; " if lacking and extra else "")
                + (f"not an input: {', '.join(map(str, extra))}"
                   if extra else ""))
        return [named[n] for n in self.input_names]

    def _device(self, value, what, want):
        """`value` as a _DeviceArray matching `want`, or StepError."""
        if not self.on_device:
            raise StepError(f"{what}: a device array, but @{self.name} was "
                            "compiled for the CPU (host arrays only)")
        a = _device_array(value, what)
        if a.dtype != want.numpy_dtype or a.shape != want.shape:
            raise StepError(f"{what}: expected {want.describe()}, got "
                            f"device {a.dtype} {_shape_string(a.shape)}")
        if not a.contiguous:
            raise StepError(f"{what}: a device array must be C-contiguous")
        return a

    def check(self, *args):
        """The arguments as C-contiguous NumPy arrays (or _DeviceArray
        records of device arrays), checked against the signature with
        ga-run's messages."""
        sig = self.signature
        if len(args) != len(sig.inputs):
            raise StepError(f"@{self.name} takes {len(sig.inputs)} "
                            f"argument(s), got {len(args)}")
        arrays = []
        for i, (value, want) in enumerate(zip(args, sig.inputs)):
            which = f" ({want.name})" if want.name else ""
            if _is_device_array(value):
                arrays.append(self._device(value, f"argument #{i}{which}",
                                           want))
                continue
            a = _as_array(value)
            if a.dtype != want.numpy_dtype or tuple(a.shape) != want.shape:
                got = f"{a.dtype} {_shape_string(tuple(a.shape))}"
                which = f" ({want.name})" if want.name else ""
                raise StepError(f"argument #{i}{which}: expected "
                                f"{want.describe()}, got {got}")
            arrays.append(np.ascontiguousarray(a))
        return arrays

    def __call__(self, *args, out=None):
        """Runs the step. Returns the results in order (a tuple), written
        into `out` (a sequence of arrays of the results' shapes and dtypes)
        when given."""
        sig = self.signature
        arrays = self.check(*args)
        if out is None:
            out = [np.empty(r.shape, r.numpy_dtype) for r in sig.results]
            targets = list(out)
        else:
            out = list(out)
            if len(out) != len(sig.results):
                raise StepError(f"@{self.name} returns {len(sig.results)} "
                                f"result(s), out= has {len(out)}")
            # What the step writes: the host arrays, or _DeviceArray
            # records of the device arrays.
            targets = []
            for i, (o, want) in enumerate(zip(out, sig.results)):
                if _is_device_array(o):
                    d = self._device(o, f"out[{i}]", want)
                    if d.readonly:
                        raise StepError(f"out[{i}]: a read-only device array")
                    targets.append(d)
                    continue
                if not isinstance(o, np.ndarray) or \
                        o.dtype != want.numpy_dtype or \
                        tuple(o.shape) != want.shape or \
                        not o.flags.c_contiguous or not o.flags.writeable:
                    raise StepError(f"out[{i}]: expected a writable "
                                    f"C-contiguous {want.describe()}")
                targets.append(o)

        def pointer(a):
            return a.pointer if isinstance(a, _DeviceArray) else a.ctypes.data

        in_ptrs = (ctypes.c_void_p * max(1, len(arrays)))(
            *[pointer(a) for a in arrays])
        # A zero-size host result still gets a valid pointer.
        keep = [t if isinstance(t, _DeviceArray) or t.size else
                np.empty(1, t.dtype) for t in targets]
        out_ptrs = (ctypes.c_void_p * max(1, len(keep)))(
            *[pointer(o) for o in keep])
        if any(isinstance(a, _DeviceArray) for a in arrays + keep):
            # The producers of device arrays may run on other streams.
            _synchronize_device()
        status = _Status()
        rc = self._run(in_ptrs, out_ptrs, ctypes.byref(status))
        if rc != 0:
            message = status.message.decode()
            if rc == 1:
                message = f"@{self.name}: {message}"
            raise StepError(message + "; no result", rc)
        return tuple(out)

    def summary(self, results):
        """(loss, gradient norm) as ga-run prints them, in float64."""
        idx = self.signature.loss_index
        loss = float(results[idx]) if idx is not None else None
        total = 0.0
        has = False
        for r, spec in zip(results, self.signature.results):
            if spec.role == "gradient":
                has = True
                total += float(np.sum(np.asarray(r, np.float64) ** 2))
        return loss, (float(np.sqrt(total)) if has else None)


def _synchronize_device():
    """Waits for all work on the current CUDA context (the primary one,
    which the CUDA runtime shares with the frameworks)."""
    global _cuda
    if _cuda is None:
        _cuda = ctypes.CDLL("libcuda.so.1")
        _cuda.cuCtxSynchronize.restype = ctypes.c_int
    rc = _cuda.cuCtxSynchronize()
    if rc != 0:
        raise StepError(f"cuCtxSynchronize failed (CUDA error {rc}) before "
                        "the step read its device arrays")


_cuda = None


def load(path):
    """Loads the step library at `path` (built by ga-compile)."""
    return Step(path)
