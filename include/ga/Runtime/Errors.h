//===- Errors.h - The runtime error path of compiled steps ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A compiled step never stops in the middle: when it finds an invalid input
// (a label outside [0, V) that is not ignore_index), it reports it through
// `ga_report_error` and goes on with a defined, clamped computation. The
// caller (ga-run; later the ahead-of-time library's entry point and the CUDA
// runtime, which copy a device-side record into the same structure) takes the
// first error after the step with `ga_take_error`, and then discards the
// results: a step that reported an error has no valid result.
//
// C ABI, with no MLIR or LLVM dependency. The first error of a step wins;
// later ones only increase `count`. Thread-safe.
//
//   void ga_report_error(int32_t code, int64_t argument, int64_t position,
//                        int64_t value, int64_t bound, int64_t ignore);
//
//   void ga_report_assertion(const char *message, int64_t position);
//
// GA_ERROR_ASSERTION (reported by ga_report_assertion, which
// train-check-asserts calls for a failed `cf.assert`): `message` is a
// constant string of the compiled module (the assert's text, location and
// iteration space), `position` the first failing iteration in row-major
// order, -1 for an assert outside loops.
//
// For GA_ERROR_LABEL_OUT_OF_RANGE: `argument` is the index of the function
// argument that holds the labels (-1 when they are computed inside the step),
// `position` the row-major index of the element in that argument, `value`
// the label, `bound` the number of classes V, `ignore` the ignore_index.
//
//===----------------------------------------------------------------------===//

#ifndef GA_RUNTIME_ERRORS_H
#define GA_RUNTIME_ERRORS_H

#include "ga/Runtime/ga_step.h"

#include <cstdint>
#include <string>

extern "C" {

/// The first error a step reported, and how many it reported.
struct ga_error {
  int32_t code;
  int64_t argument;
  int64_t position;
  int64_t value;
  int64_t bound;
  int64_t ignore;
  int64_t count;
  /// GA_ERROR_ASSERTION: the check's message (static storage of the
  /// compiled module); null otherwise.
  const char *message;
};

/// Called by compiled code (see the file comment).
void ga_report_error(int32_t code, int64_t argument, int64_t position,
                     int64_t value, int64_t bound, int64_t ignore);

/// Called by compiled code for a failed assert (see the file comment).
void ga_report_assertion(const char *message, int64_t position);

/// Moves the pending error, if any, into `*out` and clears it. Returns the
/// error code (GA_OK when none was reported; `*out` is then zeroed).
int32_t ga_take_error(struct ga_error *out);

} // extern "C"

namespace ga {

/// One sentence for `error`, e.g. "label 64 at position 53 of argument #4 is
/// outside [0, 64) and is not ignore_index (-100)". `where` describes the
/// position (a multi-index such as "[3, 5]") when the caller knows the
/// argument's shape; empty, the flat position is printed.
std::string describeError(const ga_error &error, const std::string &where = "");

} // namespace ga

#endif // GA_RUNTIME_ERRORS_H
