//===- Attention.cpp - The CPU runtime's fused attention ------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The reference implementation of the runtime's fused attention, the calls
// that train.attention and train.attention_grad become with
// attention=library (lib/Conversion/TrainToLinalg/AttentionToCalls.cpp,
// which documents the ABI): on the CPU target, and as ga_host_attention_*
// for the CUDA target's device program run on the CPU (gpu-emulate), where
// the device calls cuDNN's (lib/Runtime/CUDA/Attention.cpp).
//
// Row by row, as flash attention computes it: the scores of a query, their
// maximum m and sum l of exp(s - m), lse = m + log(l), out = (sum_j p_j v_j)
// / l. With bfloat16 operands (the form cuDNN's fused attention takes), the
// arithmetic is float32 and the roundings are where flash attention's are:
// the probabilities p, and in the backward pass the score gradients ds, are
// rounded to bfloat16 before their products with the values, keys and
// queries; every result is rounded to bfloat16 once, at its end; lse stays
// float32. float32 and float64 operands compute in their own type without
// roundings. The backward pass recomputes each row's maximum and sum from
// the scores rather than reading lse (which it is passed, as cuDNN's
// reads it): a float32 lse cannot resolve a row that sees only masked keys
// (-1e9 + log T rounds to -1e9). Standard C++ only.
//
//===----------------------------------------------------------------------===//

#include "Bfloat16.h"

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <vector>

namespace {

/// A ranked memref descriptor (MLIR's ABI), read through its unranked form.
struct View {
  char *aligned = nullptr;
  int64_t offset = 0;
  int64_t rank = 0;
  const int64_t *sizes = nullptr, *strides = nullptr;

  View() = default;
  View(int64_t rank, void *descriptor) : rank(rank) {
    auto *fields = static_cast<int64_t *>(descriptor);
    aligned = reinterpret_cast<char *>(fields[1]);
    offset = fields[2];
    sizes = fields + 3;
    strides = fields + 3 + rank;
  }
  /// The linear index (in elements) of `idx` (rank entries).
  int64_t at(std::initializer_list<int64_t> idx) const {
    int64_t linear = offset, d = 0;
    for (int64_t i : idx)
      linear += i * strides[d++];
    return linear;
  }
};

using ga::runtime::bf16ToFloat;
using ga::runtime::floatToBf16;

/// How elements of type T are read and written, and in which type the
/// arithmetic is done (Acc).
template <typename T> struct Element {
  using Acc = T;
  static Acc load(const View &v, int64_t i) {
    return reinterpret_cast<const T *>(v.aligned)[i];
  }
  static void store(const View &v, int64_t i, Acc x) {
    reinterpret_cast<T *>(v.aligned)[i] = x;
  }
  /// What a product's operand becomes (flash attention's roundings).
  static Acc operand(Acc x) { return x; }
};
template <> struct Element<uint16_t> {
  using Acc = float;
  static Acc load(const View &v, int64_t i) {
    return bf16ToFloat(reinterpret_cast<const uint16_t *>(v.aligned)[i]);
  }
  static void store(const View &v, int64_t i, Acc x) {
    reinterpret_cast<uint16_t *>(v.aligned)[i] = floatToBf16(x);
  }
  static Acc operand(Acc x) { return bf16ToFloat(floatToBf16(x)); }
};

[[noreturn]] void die(const char *what, const char *why) {
  std::fprintf(stderr, "error: %s: %s\n", what, why);
  std::fflush(stderr);
  std::exit(1);
}

/// The shapes of one call, checked against each other.
struct Shape {
  int64_t batch, queries, heads, features, keys, valueFeatures;
};

Shape shapeOf(const char *what, const View &q, const View &k, const View &v) {
  if (q.rank != 4 || k.rank != 4 || v.rank != 4)
    die(what, "query, key and value must be of rank 4 [B, S, H, D]");
  Shape s{q.sizes[0], q.sizes[1], q.sizes[2],
          q.sizes[3], k.sizes[1], v.sizes[3]};
  if (k.sizes[0] != s.batch || k.sizes[2] != s.heads ||
      k.sizes[3] != s.features || v.sizes[0] != s.batch ||
      v.sizes[1] != s.keys || v.sizes[2] != s.heads)
    die(what, "the key and value shapes do not match the query's");
  return s;
}

/// The scores of query `i` of (b, h): `scores[j]` for the keys it sees
/// (j < `seen`), masked keys at `masked`. Returns `seen`.
template <typename T>
int64_t scoresOf(const View &q, const View &k, const View *mask, const Shape &s,
                 int64_t b, int64_t h, int64_t i, bool causal, double scale,
                 double masked, std::vector<typename Element<T>::Acc> &scores) {
  using E = Element<T>;
  using Acc = typename E::Acc;
  int64_t seen = causal ? i + 1 : s.keys;
  for (int64_t j = 0; j < seen; ++j) {
    if (mask &&
        !reinterpret_cast<const uint8_t *>(mask->aligned)[mask->at({b, j})]) {
      scores[j] = Acc(masked);
      continue;
    }
    Acc sum = 0;
    for (int64_t d = 0; d < s.features; ++d)
      sum += E::load(q, q.at({b, i, h, d})) * E::load(k, k.at({b, j, h, d})) *
             Acc(scale);
    scores[j] = sum;
  }
  return seen;
}

/// The largest of the first `seen` scores (the row's maximum).
template <typename Acc>
Acc rowMax(const std::vector<Acc> &scores, int64_t seen) {
  Acc m = -std::numeric_limits<Acc>::infinity();
  for (int64_t j = 0; j < seen; ++j)
    m = std::max(m, scores[j]);
  return m;
}

template <typename T>
void forward(const char *what, int64_t qr, void *qd, int64_t kr, void *kd,
             int64_t vr, void *vd, int64_t mr, void *md, int64_t orr, void *od,
             int64_t lr, void *ld, double scale, int32_t causal,
             double masked) {
  using E = Element<T>;
  using Acc = typename E::Acc;
  using Stat = std::conditional_t<std::is_same_v<T, double>, double, float>;
  View q(qr, qd), k(kr, kd), v(vr, vd), out(orr, od), lse(lr, ld), mask;
  if (md)
    mask = View(mr, md);
  Shape s = shapeOf(what, q, k, v);
  if (causal && s.keys != s.queries)
    die(what, "a causal attention needs as many keys as queries");
  std::vector<Acc> scores(s.keys), acc(s.valueFeatures);
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h)
      for (int64_t i = 0; i < s.queries; ++i) {
        int64_t seen = scoresOf<T>(q, k, md ? &mask : nullptr, s, b, h, i,
                                   causal, scale, masked, scores);
        Acc m = rowMax(scores, seen), l = 0;
        std::fill(acc.begin(), acc.end(), Acc(0));
        for (int64_t j = 0; j < seen; ++j) {
          Acc p = std::exp(scores[j] - m);
          l += p;
          Acc pv = E::operand(p);
          for (int64_t e = 0; e < s.valueFeatures; ++e)
            acc[e] += pv * E::load(v, v.at({b, j, h, e}));
        }
        for (int64_t e = 0; e < s.valueFeatures; ++e)
          E::store(out, out.at({b, i, h, e}), acc[e] / l);
        reinterpret_cast<Stat *>(lse.aligned)[lse.at({b, h, i})] =
            Stat(m + std::log(l));
      }
}

template <typename T>
void backward(const char *what, int64_t qr, void *qd, int64_t kr, void *kd,
              int64_t vr, void *vd, int64_t orr, void *od, int64_t /*lr*/,
              void * /*ld: lse, which the rows' statistics replace*/,
              int64_t gr, void *gd, int64_t dlr, void *dld, int64_t mr,
              void *md, int64_t dqr, void *dqd, int64_t dkr, void *dkd,
              int64_t dvr, void *dvd, double scale, int32_t causal,
              double masked) {
  using E = Element<T>;
  using Acc = typename E::Acc;
  using Stat = std::conditional_t<std::is_same_v<T, double>, double, float>;
  View q(qr, qd), k(kr, kd), v(vr, vd), out(orr, od), dout(gr, gd),
      dq(dqr, dqd), dk(dkr, dkd), dv(dvr, dvd), dlse, mask;
  if (dld)
    dlse = View(dlr, dld);
  if (md)
    mask = View(mr, md);
  Shape s = shapeOf(what, q, k, v);
  if (causal && s.keys != s.queries)
    die(what, "a causal attention needs as many keys as queries");
  int64_t D = s.features, E_ = s.valueFeatures;
  std::vector<Acc> scores(s.keys), dqAcc(s.queries * D), dkAcc(s.keys * D),
      dvAcc(s.keys * E_);
  auto stat = [](const View &view, int64_t i) {
    return Acc(reinterpret_cast<const Stat *>(view.aligned)[i]);
  };
  for (int64_t b = 0; b < s.batch; ++b)
    for (int64_t h = 0; h < s.heads; ++h) {
      std::fill(dqAcc.begin(), dqAcc.end(), Acc(0));
      std::fill(dkAcc.begin(), dkAcc.end(), Acc(0));
      std::fill(dvAcc.begin(), dvAcc.end(), Acc(0));
      for (int64_t i = 0; i < s.queries; ++i) {
        int64_t seen = scoresOf<T>(q, k, md ? &mask : nullptr, s, b, h, i,
                                   causal, scale, masked, scores);
        Acc delta = 0;
        for (int64_t e = 0; e < E_; ++e)
          delta += E::load(dout, dout.at({b, i, h, e})) *
                   E::load(out, out.at({b, i, h, e}));
        if (dld)
          delta -= stat(dlse, dlse.at({b, h, i}));
        // The row's maximum and sum again, rather than the saved lse: in
        // float32, a row that sees only masked keys has lse = -1e9 + log T,
        // which rounds to -1e9 and would give each key weight 1.
        Acc m = rowMax(scores, seen), l = 0;
        for (int64_t j = 0; j < seen; ++j)
          l += std::exp(scores[j] - m);
        for (int64_t j = 0; j < seen; ++j) {
          Acc p = std::exp(scores[j] - m) / l;
          Acc pv = E::operand(p);
          Acc dp = 0;
          for (int64_t e = 0; e < E_; ++e) {
            Acc g = E::load(dout, dout.at({b, i, h, e}));
            dvAcc[j * E_ + e] += pv * g;
            dp += g * E::load(v, v.at({b, j, h, e}));
          }
          bool hidden = md && !reinterpret_cast<const uint8_t *>(
                                  mask.aligned)[mask.at({b, j})];
          if (hidden) // a masked score is a constant
            continue;
          Acc ds = E::operand(p * (dp - delta));
          for (int64_t d = 0; d < D; ++d) {
            dqAcc[i * D + d] +=
                ds * E::load(k, k.at({b, j, h, d})) * Acc(scale);
            dkAcc[j * D + d] +=
                ds * E::load(q, q.at({b, i, h, d})) * Acc(scale);
          }
        }
      }
      for (int64_t i = 0; i < s.queries; ++i)
        for (int64_t d = 0; d < D; ++d)
          E::store(dq, dq.at({b, i, h, d}), dqAcc[i * D + d]);
      for (int64_t j = 0; j < s.keys; ++j) {
        for (int64_t d = 0; d < D; ++d)
          E::store(dk, dk.at({b, j, h, d}), dkAcc[j * D + d]);
        for (int64_t e = 0; e < E_; ++e)
          E::store(dv, dv.at({b, j, h, e}), dvAcc[j * E_ + e]);
      }
    }
}

} // namespace

// The entry points, each under its CPU name (ga_attention_*) and its name
// in the emulated device program (ga_host_attention_*, which
// ga-gpu-emulate-on-host makes of the CUDA runtime's ga_cuda_attention_*).
#define GA_ATTENTION_ENTRY_POINTS(SUFFIX, T)                                   \
  void ga_attention_fwd_##SUFFIX(int64_t qr, void *q, int64_t kr, void *k,     \
                                 int64_t vr, void *v, int64_t orr, void *o,    \
                                 int64_t lr, void *l, double scale,            \
                                 int32_t causal, double masked) {              \
    forward<T>("ga_attention_fwd_" #SUFFIX, qr, q, kr, k, vr, v, 0, nullptr,   \
               orr, o, lr, l, scale, causal, masked);                          \
  }                                                                            \
  void ga_host_attention_fwd_##SUFFIX(                                         \
      int64_t qr, void *q, int64_t kr, void *k, int64_t vr, void *v,           \
      int64_t orr, void *o, int64_t lr, void *l, double scale, int32_t causal, \
      double masked) {                                                         \
    ga_attention_fwd_##SUFFIX(qr, q, kr, k, vr, v, orr, o, lr, l, scale,       \
                              causal, masked);                                 \
  }                                                                            \
  void ga_attention_fwd_masked_##SUFFIX(                                       \
      int64_t qr, void *q, int64_t kr, void *k, int64_t vr, void *v,           \
      int64_t mr, void *m, int64_t orr, void *o, int64_t lr, void *l,          \
      double scale, int32_t causal, double masked) {                           \
    forward<T>("ga_attention_fwd_masked_" #SUFFIX, qr, q, kr, k, vr, v, mr, m, \
               orr, o, lr, l, scale, causal, masked);                          \
  }                                                                            \
  void ga_attention_bwd_##SUFFIX(                                              \
      int64_t qr, void *q, int64_t kr, void *k, int64_t vr, void *v,           \
      int64_t orr, void *o, int64_t lr, void *l, int64_t gr, void *g,          \
      int64_t dqr, void *dq, int64_t dkr, void *dk, int64_t dvr, void *dv,     \
      double scale, int32_t causal, double masked) {                           \
    backward<T>("ga_attention_bwd_" #SUFFIX, qr, q, kr, k, vr, v, orr, o, lr,  \
                l, gr, g, 0, nullptr, 0, nullptr, dqr, dq, dkr, dk, dvr, dv,   \
                scale, causal, masked);                                        \
  }                                                                            \
  void ga_host_attention_bwd_##SUFFIX(                                         \
      int64_t qr, void *q, int64_t kr, void *k, int64_t vr, void *v,           \
      int64_t orr, void *o, int64_t lr, void *l, int64_t gr, void *g,          \
      int64_t dqr, void *dq, int64_t dkr, void *dk, int64_t dvr, void *dv,     \
      double scale, int32_t causal, double masked) {                           \
    ga_attention_bwd_##SUFFIX(qr, q, kr, k, vr, v, orr, o, lr, l, gr, g, dqr,  \
                              dq, dkr, dk, dvr, dv, scale, causal, masked);    \
  }                                                                            \
  void ga_attention_bwd_masked_##SUFFIX(                                       \
      int64_t qr, void *q, int64_t kr, void *k, int64_t vr, void *v,           \
      int64_t orr, void *o, int64_t lr, void *l, int64_t gr, void *g,          \
      int64_t mr, void *m, int64_t dqr, void *dq, int64_t dkr, void *dk,       \
      int64_t dvr, void *dv, double scale, int32_t causal, double masked) {    \
    backward<T>("ga_attention_bwd_masked_" #SUFFIX, qr, q, kr, k, vr, v, orr,  \
                o, lr, l, gr, g, 0, nullptr, mr, m, dqr, dq, dkr, dk, dvr, dv, \
                scale, causal, masked);                                        \
  }                                                                            \
  void ga_attention_bwd_dlse_##SUFFIX(                                         \
      int64_t qr, void *q, int64_t kr, void *k, int64_t vr, void *v,           \
      int64_t orr, void *o, int64_t lr, void *l, int64_t gr, void *g,          \
      int64_t dlr, void *dl, int64_t dqr, void *dq, int64_t dkr, void *dk,     \
      int64_t dvr, void *dv, double scale, int32_t causal, double masked) {    \
    backward<T>("ga_attention_bwd_dlse_" #SUFFIX, qr, q, kr, k, vr, v, orr, o, \
                lr, l, gr, g, dlr, dl, 0, nullptr, dqr, dq, dkr, dk, dvr, dv,  \
                scale, causal, masked);                                        \
  }                                                                            \
  void ga_attention_bwd_dlse_masked_##SUFFIX(                                  \
      int64_t qr, void *q, int64_t kr, void *k, int64_t vr, void *v,           \
      int64_t orr, void *o, int64_t lr, void *l, int64_t gr, void *g,          \
      int64_t dlr, void *dl, int64_t mr, void *m, int64_t dqr, void *dq,       \
      int64_t dkr, void *dk, int64_t dvr, void *dv, double scale,              \
      int32_t causal, double masked) {                                         \
    backward<T>("ga_attention_bwd_dlse_masked_" #SUFFIX, qr, q, kr, k, vr, v,  \
                orr, o, lr, l, gr, g, dlr, dl, mr, m, dqr, dq, dkr, dk, dvr,   \
                dv, scale, causal, masked);                                    \
  }

extern "C" {
GA_ATTENTION_ENTRY_POINTS(f32, float)
GA_ATTENTION_ENTRY_POINTS(f64, double)
GA_ATTENTION_ENTRY_POINTS(bf16, uint16_t)
}
