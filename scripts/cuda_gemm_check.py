#!/usr/bin/python3
"""GPU check of the CUDA runtime's GEMM entry points against PyTorch.

    python3 scripts/cuda_gemm_check.py --runtime build/device/lib/libga_cuda_runtime.so

(on a machine with a CUDA GPU, NumPy and PyTorch). Calls
ga_cuda_gemm_f32 and ga_cuda_gemm_batched_f32 of libga_cuda_runtime
directly, with the arguments ga-gpu-gemm-to-blas emits for the forms of the
examples (plain and transposed matrices, accumulating into C or from zero
on a C that starts as NaN, slices of a weight stack, the
attention's scaled and unscaled contractions per head with a strided batch
and host loops), on device buffers that PyTorch allocates (the runtime and
PyTorch share the device's primary context), and compares each result with
the same contraction in float64 on the CPU: max|C - ref| <= 1e-5 max|ref| +
1e-6 (cuBLAS in float32, no TF32). The bfloat16 entry points of gpu-bf16
(ga_cuda_gemm_f32_bf16, ga_cuda_gemm_batched_f32_bf16), and those of
precision=bf16-mixed on operands stored as bfloat16 (ga_cuda_gemm_f32_bf16in,
ga_cuda_gemm_bias_f32_bf16in), are compared, with
the same bound, against float64 products of the inputs rounded to the
nearest bfloat16 (what CUBLAS_COMPUTE_32F_FAST_16BF is asked for; a
failure there says cuBLAS rounded otherwise or kept more bits). The bias
GEMMs of gpu-bias-epilogue (ga_cuda_gemm_bias_f32 and its bf16 form, a
cuBLASLt matmul with the bias epilogue) are compared the same way, on a D
that starts as NaN (it must be written, not read) inside a wider buffer
that must stay NaN outside D. The two-level batches
(ga_cuda_gemm_batched2_f32 and its _bf16in and _bf16 forms: the heads of
every sequence in one call, cuBLAS's pointer-array batch on arrays that
the runtime's ga_gemm_pointer_arrays writes; gpu-bf16's a strided batch
per head) are compared the same way, with enough calls to wrap the
pointer arrays' 1 MiB ring. Exits 1 on a mismatch, 2 without a GPU.
"""

import argparse
import ctypes
import sys

import numpy as np


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runtime", required=True,
                        help="path of libga_cuda_runtime.so")
    args = parser.parse_args()
    import torch
    if not torch.cuda.is_available():
        print("cuda_gemm_check: no CUDA device")
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False
    lib = ctypes.CDLL(args.runtime)
    reason = ctypes.c_char_p()
    lib.ga_cuda_device_name.restype = ctypes.c_char_p
    lib.ga_cuda_device_name.argtypes = [ctypes.POINTER(ctypes.c_char_p)]
    name = lib.ga_cuda_device_name(ctypes.byref(reason))
    if not name:
        print(f"cuda_gemm_check: {reason.value.decode()}")
        return 2
    i32, i64, f32 = ctypes.c_int32, ctypes.c_int64, ctypes.c_float
    lib.ga_cuda_gemm_f32.argtypes = [i32, i32, i32] + [i64] * 12
    lib.ga_cuda_gemm_batched_f32.argtypes = ([i32, i32, i32] + [i64] * 4 +
                                             [f32, i32] + [i64] * 12)
    lib.ga_cuda_gemm_f32_bf16.argtypes = lib.ga_cuda_gemm_f32.argtypes
    lib.ga_cuda_gemm_batched_f32_bf16.argtypes = (
        lib.ga_cuda_gemm_batched_f32.argtypes)
    lib.ga_cuda_gemm_bias_f32.argtypes = [i32, i32] + [i64] * 14
    lib.ga_cuda_gemm_batched2_f32.argtypes = ([i32, i32, i32] + [i64] * 5 +
                                              [f32, i32] + [i64] * 15)
    for suffix in ("_bf16", "_bf16in"):
        getattr(lib, "ga_cuda_gemm_batched2_f32" + suffix).argtypes = (
            lib.ga_cuda_gemm_batched2_f32.argtypes)
    lib.ga_cuda_gemm_bias_f32_bf16.argtypes = (
        lib.ga_cuda_gemm_bias_f32.argtypes)
    # precision=bf16-mixed: A and B stored as bfloat16 (offsets and leading
    # dimensions in bfloat16 elements).
    lib.ga_cuda_gemm_f32_bf16in.argtypes = lib.ga_cuda_gemm_f32.argtypes
    lib.ga_cuda_gemm_bias_f32_bf16in.argtypes = (
        lib.ga_cuda_gemm_bias_f32.argtypes)
    rng = np.random.default_rng(3)
    failures = 0

    def device(shape):
        host = rng.standard_normal(shape).astype(np.float32)
        return host, torch.from_numpy(host).cuda()

    def report(label, got, ref):
        nonlocal failures
        err = float(np.max(np.abs(got - ref)))
        bound = 1e-5 * float(np.max(np.abs(ref))) + 1e-6
        ok = err <= bound
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} {label}: max|C - ref| = "
              f"{err:.2e} (bound {bound:.2e})")

    def bf16(x):
        """`x` in float32 rounded to the nearest bfloat16, as float64."""
        bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)

    def exact(x):
        return np.asarray(x, np.float64)

    def stored(d):
        """The device tensor `d` stored as bfloat16 (rounded to nearest
        even, as bf16() rounds), for the _bf16in entry points."""
        return d.to(torch.bfloat16)

    # Plain GEMMs: C += op(A) op(B), row-major, with offsets; in float32,
    # with bfloat16 inputs (gpu-bf16: products and sums in float32), and
    # with operands stored as bfloat16 (precision=bf16-mixed).
    for entry, operand, label, (m, n, k), keep in (
            (lib.ga_cuda_gemm_f32, exact, "gemm", (33, 17, 40), None),
            (lib.ga_cuda_gemm_f32_bf16, bf16, "bf16 gemm", (64, 48, 256),
             None),
            (lib.ga_cuda_gemm_f32_bf16in, bf16, "stored bf16 gemm",
             (64, 48, 256), stored)):
        for transA, transB, accumulate in ((0, 0, 1), (0, 1, 1), (1, 0, 1),
                                           (1, 1, 1), (0, 0, 0), (1, 1, 0)):
            a, da = device((k, m) if transA else (m, k))
            b, db = device((n, k) if transB else (k, n))
            if keep:
                da, db = keep(da), keep(db)
            c, dc = device((m, n))
            if not accumulate:
                # A product from zero: C must be written, not read.
                dc.fill_(float("nan"))
            entry(transA, transB, accumulate, m, n, k, da.data_ptr(), 0,
                  a.shape[1], db.data_ptr(), 0, b.shape[1], dc.data_ptr(), 0,
                  n)
            torch.cuda.synchronize()
            oa = a.T if transA else a
            ob = b.T if transB else b
            ref = operand(oa) @ operand(ob)
            if accumulate:
                ref = ref + c.astype(np.float64)
            report(f"{label} transA={transA} transB={transB} "
                   f"accumulate={accumulate}", dc.cpu().numpy(), ref)

    # Bias GEMMs (gpu-bias-epilogue, cuBLASLt): D = op(A) op(B) + bias,
    # D written without being read (it starts as NaN), with offsets and a
    # leading dimension wider than n; float32 and bfloat16 inputs.
    for entry, operand, label, (m, n, k), keep in (
            (lib.ga_cuda_gemm_bias_f32, exact, "bias gemm", (33, 17, 40),
             None),
            (lib.ga_cuda_gemm_bias_f32_bf16, bf16, "bf16 bias gemm",
             (64, 48, 256), None),
            (lib.ga_cuda_gemm_bias_f32_bf16in, bf16, "stored bf16 bias gemm",
             (64, 48, 256), stored)):
        for transA, transB in ((0, 0), (0, 1), (1, 0), (1, 1)):
            a, da = device((k, m) if transA else (m, k))
            b, db = device((n, k) if transB else (k, n))
            if keep:
                da, db = keep(da), keep(db)
            bias, dbias = device((n + 3,))
            ldd = n + 5
            dd = torch.full((m + 1, ldd), float("nan"), device="cuda")
            entry(transA, transB, m, n, k, da.data_ptr(), 0, a.shape[1],
                  db.data_ptr(), 0, b.shape[1], dbias.data_ptr(), 3,
                  dd.data_ptr(), ldd, ldd)
            torch.cuda.synchronize()
            oa = a.T if transA else a
            ob = b.T if transB else b
            ref = operand(oa) @ operand(ob) + bias[3:].astype(np.float64)
            got = dd.cpu().numpy()
            # Only D's rows and columns are written.
            untouched = bool(np.isnan(got[0]).all() and
                             np.isnan(got[1:, n:]).all())
            failures += not untouched
            if not untouched:
                print(f"FAIL {label}: wrote outside D")
            report(f"{label} transA={transA} transB={transB}",
                   got[1:, :n], ref)

    # The attention of the tiny GPT (B, S, H, Dh = 8, 16, 2, 8): Q, K, V
    # slices of the fused projection [B, S, 3 H Dh].
    B, S, H, Dh = 8, 16, 2, 8
    qkv, dqkv = device((B, S, 3 * H * Dh))
    q = qkv[:, :, 0:H * Dh].reshape(B, S, H, Dh).astype(np.float64)
    kk = qkv[:, :, H * Dh:2 * H * Dh].reshape(B, S, H, Dh).astype(np.float64)
    v = qkv[:, :, 2 * H * Dh:].reshape(B, S, H, Dh).astype(np.float64)
    row = 3 * H * Dh
    scale = 1.0 / np.sqrt(Dh)

    # Scores S[b, h, s, t] += scale * Q[b, s, h, :] K[b, t, h, :]: batch
    # over b (strides B: S*row, C: H*S*S), host loop over h.
    s0, ds = device((B, H, S, S))
    for h in range(H):
        lib.ga_cuda_gemm_batched_f32(
            0, 1, 1, S, S, Dh, B, scale, 1,
            dqkv.data_ptr(), h * Dh, row, S * row,
            dqkv.data_ptr(), H * Dh + h * Dh, row, S * row,
            ds.data_ptr(), h * S * S, S, H * S * S)
    torch.cuda.synchronize()
    ref = s0.astype(np.float64) + scale * np.einsum("bshd,bthd->bhst", q, kk)
    report("attention scores (scaled, batched over b, loop over h)",
           ds.cpu().numpy(), ref)

    # Output O[b, s, h, :] += P[b, h, s, :] V[b, :, h, :].
    p, dp = device((B, H, S, S))
    o0, do = device((B, S, H, Dh))
    for h in range(H):
        lib.ga_cuda_gemm_batched_f32(
            0, 0, 1, S, Dh, S, B, 1.0, 0,
            dp.data_ptr(), h * S * S, S, H * S * S,
            dqkv.data_ptr(), 2 * H * Dh + h * Dh, row, S * row,
            do.data_ptr(), h * Dh, H * Dh, S * H * Dh)
    torch.cuda.synchronize()
    ref = o0.astype(np.float64) + np.einsum("bhst,bthd->bshd",
                                            p.astype(np.float64), v)
    report("attention output (batched over b, loop over h)",
           do.cpu().numpy(), ref)

    # dV[b, t, h, :] += P[b, h, :, t]^T dO[b, :, h, :] (A transposed).
    g, dg = device((B, S, H, Dh))
    dv0, ddv = device((B, S, H, Dh))
    for h in range(H):
        lib.ga_cuda_gemm_batched_f32(
            1, 0, 1, S, Dh, S, B, 1.0, 0,
            dp.data_ptr(), h * S * S, S, H * S * S,
            dg.data_ptr(), h * Dh, H * Dh, S * H * Dh,
            ddv.data_ptr(), h * Dh, H * Dh, S * H * Dh)
    torch.cuda.synchronize()
    ref = dv0.astype(np.float64) + np.einsum(
        "bhst,bshd->bthd", p.astype(np.float64), g.astype(np.float64))
    report("attention dV (A^T, batched over b, loop over h)",
           ddv.cpu().numpy(), ref)

    # Batch over the heads instead (the widest batch dimension of another
    # model), one call per b.
    s1, ds1 = device((B, H, S, S))
    for b in range(B):
        lib.ga_cuda_gemm_batched_f32(
            0, 1, 1, S, S, Dh, H, scale, 2,
            dqkv.data_ptr(), b * S * row, row, Dh,
            dqkv.data_ptr(), b * S * row + H * Dh, row, Dh,
            ds1.data_ptr(), b * H * S * S, S, S * S)
    torch.cuda.synchronize()
    ref = s1.astype(np.float64) + scale * np.einsum("bshd,bthd->bhst", q, kk)
    report("attention scores (batched over h, loop over b)",
           ds1.cpu().numpy(), ref)

    # The scores from zero (accumulate 0): C starts as NaN and is written.
    ds3 = torch.full((B, H, S, S), float("nan"), device="cuda")
    for h in range(H):
        lib.ga_cuda_gemm_batched_f32(
            0, 1, 0, S, S, Dh, B, scale, 1,
            dqkv.data_ptr(), h * Dh, row, S * row,
            dqkv.data_ptr(), H * Dh + h * Dh, row, S * row,
            ds3.data_ptr(), h * S * S, S, H * S * S)
    torch.cuda.synchronize()
    ref = scale * np.einsum("bshd,bthd->bhst", q, kk)
    report("attention scores from zero (scaled, batched over b)",
           ds3.cpu().numpy(), ref)

    # gpu-bf16 in the batched entry point.
    s2, ds2 = device((B, H, S, S))
    for h in range(H):
        lib.ga_cuda_gemm_batched_f32_bf16(
            0, 1, 1, S, S, Dh, B, scale, 1,
            dqkv.data_ptr(), h * Dh, row, S * row,
            dqkv.data_ptr(), H * Dh + h * Dh, row, S * row,
            ds2.data_ptr(), h * S * S, S, H * S * S)
    torch.cuda.synchronize()
    rq = bf16(qkv[:, :, 0:H * Dh]).reshape(B, S, H, Dh)
    rk = bf16(qkv[:, :, H * Dh:2 * H * Dh]).reshape(B, S, H, Dh)
    ref = s2.astype(np.float64) + scale * np.einsum("bshd,bthd->bhst", rq, rk)
    report("bf16 attention scores (scaled, batched over b)",
           ds2.cpu().numpy(), ref)

    # Two-level batches: the scores of every (h, b) in one call (outer h,
    # inner b), from zero on a C that starts as NaN; float32, gpu-bf16's
    # rounding, and Q and K stored as bfloat16. 3,000 float32 calls of 16
    # products (384 bytes of pointers each) wrap the 1 MiB ring once: the
    # last result is checked after it.
    dqkv16 = stored(dqkv)
    for entry, operand, source, label in (
            (lib.ga_cuda_gemm_batched2_f32, exact, dqkv, "two-level"),
            (lib.ga_cuda_gemm_batched2_f32_bf16, bf16, dqkv,
             "bf16 two-level"),
            (lib.ga_cuda_gemm_batched2_f32_bf16in, bf16, dqkv16,
             "stored bf16 two-level")):
        ds4 = torch.full((B, H, S, S), float("nan"), device="cuda")
        calls = 3000 if entry is lib.ga_cuda_gemm_batched2_f32 else 1
        for _ in range(calls):
            entry(0, 1, 0, S, S, Dh, H, B, scale, 1,
                  source.data_ptr(), 0, row, Dh, S * row,
                  source.data_ptr(), H * Dh, row, Dh, S * row,
                  ds4.data_ptr(), 0, S, S * S, H * S * S)
        torch.cuda.synchronize()
        rq = operand(qkv[:, :, 0:H * Dh]).reshape(B, S, H, Dh)
        rk = operand(qkv[:, :, H * Dh:2 * H * Dh]).reshape(B, S, H, Dh)
        ref = scale * np.einsum("bshd,bthd->bhst", rq, rk)
        report(f"{label} attention scores (outer h, inner b, {calls} "
               f"call(s))", ds4.cpu().numpy(), ref)
    # Accumulating, with offsets: dV[b, t, h, :] += P[b, h, :, t]^T
    # dO[b, :, h, :] in one call.
    dv5, ddv5 = device((B, S, H, Dh))
    lib.ga_cuda_gemm_batched2_f32(
        1, 0, 1, S, Dh, S, H, B, 1.0, 0,
        dp.data_ptr(), 0, S, S * S, H * S * S,
        dg.data_ptr(), 0, H * Dh, Dh, S * H * Dh,
        ddv5.data_ptr(), 0, H * Dh, Dh, S * H * Dh)
    torch.cuda.synchronize()
    ref = dv5.astype(np.float64) + np.einsum(
        "bhst,bshd->bthd", p.astype(np.float64), g.astype(np.float64))
    report("two-level attention dV (A^T, accumulating)", ddv5.cpu().numpy(),
           ref)

    print(f"cuda_gemm_check: {failures} failure(s) on {name.decode()}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
