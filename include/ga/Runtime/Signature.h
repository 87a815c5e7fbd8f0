//===- Signature.h - The recorded signature of a step -----------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// What a compiled step takes and returns: the element type and shape of
// every argument and result, which result is the loss and which are
// gradients, and the number of data-parallel ranks. ga-compile records it
// in the step library as text (format: ga/Runtime/ga_step.h); ga-run builds
// it from the MLIR function. Both runners check their inputs against it
// with the same messages. Part of the runtime: standard C++ only.
//
//===----------------------------------------------------------------------===//

#ifndef GA_RUNTIME_SIGNATURE_H
#define GA_RUNTIME_SIGNATURE_H

#include "ga/Runtime/Npy.h"

#include <optional>
#include <string>
#include <vector>

namespace ga {

/// What a result is to the caller.
enum class TensorRole { Loss, Gradient, Aux };

/// One argument or result: a statically shaped tensor.
struct TensorSpec {
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;
  TensorRole role = TensorRole::Aux;
  /// An argument's name (a parameter's state_dict key), or empty.
  std::string name;

  int64_t numElements() const;
  size_t numBytes() const { return numElements() * npyDTypeSize(dtype); }
  /// As MLIR prints the type, and as NumPy: "tensor<4x3xf32> (float32 (4,
  /// 3))".
  std::string describe() const;
};

struct StepSignature {
  std::string entry;
  int64_t ranks = 1;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> results;

  /// The result that holds the loss, if one has the role.
  std::optional<size_t> lossIndex() const;
  /// The text recorded in a step library (ga/Runtime/ga_step.h): version 1
  /// when no argument has a name, else version 2 with `name` records.
  std::string format() const;
};

/// Parses the text of a step library's signature into `out`. Returns false,
/// with the line and the reason in `error`, on malformed text or another
/// ABI version.
bool parseSignature(const std::string &text, StepSignature &out,
                    std::string &error);

/// The parsed signature of a step library's `text`, parsed once per text
/// and kept for the process (a library's text lives as long as the
/// library): what the entry and exit of every step read. Null, with the
/// reason in `error`, for a null or malformed text. Thread-safe.
const StepSignature *cachedSignature(const char *text, std::string &error);

/// "f32" for F32, ...
const char *dtypeToken(NpyDType dtype);

/// The check of argument `index` of `signature`'s step (read from `path`)
/// against the array given for it: an empty string when they agree, else
/// "argument #I ('PATH'): expected tensor<4x3xf32> (float32 (4, 3)), got
/// float64 (4, 3)".
std::string checkArgument(const StepSignature &signature, size_t index,
                          const NpyArray &array, const std::string &path);

/// "@NAME takes N argument(s), got M .npy file(s)" when the counts differ,
/// else an empty string.
std::string checkArgumentCount(const StepSignature &signature, size_t given);

/// The multi-index "[3, 5]" of row-major position `flat` in `shape`.
std::string multiIndex(const std::vector<int64_t> &shape, int64_t flat);

/// The printed summary of a step's results: the loss (the loss result, else
/// the first 0-d float result) and the global gradient norm, in float64.
struct StepSummary {
  std::optional<size_t> lossIndex;
  double loss = 0;
  bool hasGradients = false;
  double gradNorm = 0;
  /// One sentence per NaN or infinite value among them.
  std::vector<std::string> nonFinite;
  /// "loss: ...\ngrad_norm: ...\n" as ga-run and ga-exec print them.
  std::string text;
};
StepSummary summarize(const StepSignature &signature,
                      const std::vector<NpyArray> &results);

/// Writes result i to DIR/result<i>.npy, creating DIR if missing. Returns
/// false with the reason in `error`.
bool writeResults(const std::string &dir, const std::vector<NpyArray> &results,
                  std::string &error);

} // namespace ga

#endif // GA_RUNTIME_SIGNATURE_H
