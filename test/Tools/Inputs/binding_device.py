"""The Python binding with device arrays (__cuda_array_interface__) against
the driver stand-in: a CUDA step library takes them as arguments and out=
without reading them on the host (the stand-in maps device memory without
access rights, so a host read would crash), copying device to device; a
step compiled for the CPU, a shape, a layout or a read-only out= that do
not fit are refused with ga-run's kind of message.

  binding_device.py CUDA_LIB CPU_LIB ARG.npy...
"""
import ctypes
import sys

import numpy as np

import ga_step

cuda_lib, cpu_lib, paths = sys.argv[1], sys.argv[2], sys.argv[3:]
host = [np.load(p) for p in paths]
step = ga_step.load(cuda_lib)   # loads the stand-in as libcuda.so.1
cuda = ctypes.CDLL("libcuda.so.1")
cuda.cuMemAlloc_v2.argtypes = [ctypes.POINTER(ctypes.c_ulonglong),
                               ctypes.c_size_t]
cuda.cuMemcpyAsync.argtypes = [ctypes.c_ulonglong, ctypes.c_ulonglong,
                               ctypes.c_size_t, ctypes.c_void_p]


class Device:
    """A device array as CuPy or a CUDA torch.Tensor describes one."""

    def __init__(self, shape, dtype, strides=None, readonly=False):
        self.shape, self.dtype = tuple(shape), np.dtype(dtype)
        pointer = ctypes.c_ulonglong()
        nbytes = max(1, int(np.prod(shape)) * self.dtype.itemsize)
        assert cuda.cuMemAlloc_v2(ctypes.byref(pointer), nbytes) == 0
        self.pointer, self.nbytes = pointer.value, nbytes
        self.__cuda_array_interface__ = {
            "shape": self.shape, "typestr": self.dtype.str,
            "data": (self.pointer, readonly), "strides": strides,
            "version": 3}

    @staticmethod
    def of(array):
        d = Device(array.shape, array.dtype)
        a = np.ascontiguousarray(array)
        assert cuda.cuMemcpyAsync(d.pointer, a.ctypes.data, a.nbytes,
                                  None) == 0
        return d

    def get(self):
        a = np.empty(self.shape, self.dtype)
        assert cuda.cuMemcpyAsync(a.ctypes.data, self.pointer, a.nbytes,
                                  None) == 0
        return a


def attempt(what, fn):
    try:
        fn()
        print(what, "-> no error")
    except ga_step.StepError as e:
        print(what, "->", e)


print("on device:", step.on_device)
args = [Device.of(a) for a in host]
results = step(*args)
print("host results:", [r.shape for r in results])
outs = [Device(r.shape, r.numpy_dtype) for r in step.signature.results]
again = step(*args, out=outs)
print("device results:", all(a is b for a, b in zip(again, outs)),
      [o.get().shape == r.shape for o, r in zip(outs, results)])
mixed = step(host[0], *args[1:])
print("mixed:", len(mixed))
# The benchmark's count of a step's own device buffers (the runtime's
# allocator): a step on device arrays holds as much as one on host arrays.
from bench_cuda import DeviceMemory  # noqa: E402
memory = DeviceMemory(cuda_lib)
memory.reset()
step(*host)
on_host = memory.peak()
memory.reset()
step(*args, out=outs)
print("step buffers:", on_host > 0, memory.peak() == on_host)
# The cache of freed blocks given back to the driver (ga_cuda_empty_cache,
# between the benchmark's models): bytes the first time, none the second;
# the next step allocates again.
freed = memory.empty_cache()
print("empty cache:", freed > 0, memory.empty_cache() == 0)
after = step(*args, out=outs)
print("after empty cache:", [a.shape for a in after] ==
      [r.shape for r in results])
w = host[0]
attempt("shape", lambda: step(Device(w.shape[::-1], w.dtype), *args[1:]))
attempt("layout", lambda: step(
    Device(w.shape, w.dtype, strides=(w.dtype.itemsize,
                                      w.shape[0] * w.dtype.itemsize)),
    *args[1:]))
attempt("read-only out", lambda: step(*args, out=[
    Device(r.shape, r.numpy_dtype, readonly=True)
    for r in step.signature.results]))
cpu = ga_step.load(cpu_lib)
print("cpu on device:", cpu.on_device)
attempt("cpu", lambda: cpu(*args))
