//===- Errors.cpp - The runtime error path of compiled steps -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Errors.h"

#include <mutex>

namespace {
std::mutex errorMutex;
ga_error pending{};
} // namespace

extern "C" void ga_report_error(int32_t code, int64_t argument,
                                int64_t position, int64_t value, int64_t bound,
                                int64_t ignore) {
  std::lock_guard<std::mutex> lock(errorMutex);
  if (pending.count++ == 0)
    pending = {code, argument, position, value, bound, ignore, 1, nullptr};
}

extern "C" void ga_report_assertion(const char *message, int64_t position) {
  std::lock_guard<std::mutex> lock(errorMutex);
  if (pending.count++ == 0)
    pending = {GA_ERROR_ASSERTION, -1, position, 0, 0, 0, 1, message};
}

extern "C" int32_t ga_take_error(ga_error *out) {
  std::lock_guard<std::mutex> lock(errorMutex);
  *out = pending;
  pending = ga_error{};
  return out->count ? out->code : GA_OK;
}

std::string ga::describeError(const ga_error &error, const std::string &where) {
  std::string position = where.empty()
                             ? "flat position " + std::to_string(error.position)
                             : "position " + where + " (flat " +
                                   std::to_string(error.position) + ")";
  std::string text;
  switch (error.code) {
  case GA_OK:
    return "no error";
  case GA_ERROR_LABEL_OUT_OF_RANGE:
    text = "label " + std::to_string(error.value) + " at " + position +
           (error.argument >= 0
                ? " of argument #" + std::to_string(error.argument)
                : std::string(" of the labels of a cross-entropy")) +
           " is outside [0, " + std::to_string(error.bound) +
           ") and is not ignore_index (" + std::to_string(error.ignore) + ")";
    break;
  case GA_ERROR_ASSERTION:
    text = std::string("a check of the step failed: ") +
           (error.message ? error.message : "(no message)");
    if (error.position >= 0)
      text += ", first at flat position " + std::to_string(error.position);
    break;
  default:
    text = "runtime error " + std::to_string(error.code);
    break;
  }
  if (error.count > 1)
    text += " (and " + std::to_string(error.count - 1) +
            (error.code == GA_ERROR_ASSERTION ? " more failed check(s))"
                                              : " more invalid value(s))");
  return text;
}
