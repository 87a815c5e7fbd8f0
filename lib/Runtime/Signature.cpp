//===- Signature.cpp - The recorded signature of a step -------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Signature.h"

#include "ga/Runtime/ga_step.h"

#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <sstream>
#include <sys/stat.h>

namespace ga {

int64_t TensorSpec::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

const char *dtypeToken(NpyDType dtype) {
  switch (dtype) {
  case NpyDType::F32:
    return "f32";
  case NpyDType::F64:
    return "f64";
  case NpyDType::I32:
    return "i32";
  case NpyDType::I64:
    return "i64";
  case NpyDType::Bool:
    return "i1";
  }
  return "?";
}

static const char *roleToken(TensorRole role) {
  switch (role) {
  case TensorRole::Loss:
    return "loss";
  case TensorRole::Gradient:
    return "gradient";
  case TensorRole::Aux:
    return "aux";
  }
  return "?";
}

std::string TensorSpec::describe() const {
  std::string text = "tensor<";
  for (int64_t d : shape)
    text += std::to_string(d) + "x";
  text += std::string(dtypeToken(dtype)) + "> (" + npyDTypeName(dtype) + " " +
          npyShapeString(shape) + ")";
  return text;
}

std::optional<size_t> StepSignature::lossIndex() const {
  for (size_t i = 0; i < results.size(); ++i)
    if (results[i].role == TensorRole::Loss)
      return i;
  return std::nullopt;
}

static std::string shapeToken(const std::vector<int64_t> &shape) {
  if (shape.empty())
    return "scalar";
  std::string text;
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? "x" : "") + std::to_string(shape[i]);
  return text;
}

std::string StepSignature::format() const {
  bool named = false;
  for (const TensorSpec &input : inputs)
    named |= !input.name.empty();
  std::string text = "ga-step " + std::string(named ? "2" : "1") + "\n";
  text += "entry " + entry + "\n";
  text += "ranks " + std::to_string(ranks) + "\n";
  for (size_t i = 0; i < inputs.size(); ++i)
    text += "input " + std::to_string(i) + " " + dtypeToken(inputs[i].dtype) +
            " " + shapeToken(inputs[i].shape) + "\n";
  for (size_t i = 0; i < inputs.size(); ++i)
    if (!inputs[i].name.empty())
      text += "name " + std::to_string(i) + " " + inputs[i].name + "\n";
  for (size_t i = 0; i < results.size(); ++i)
    text += "result " + std::to_string(i) + " " + dtypeToken(results[i].dtype) +
            " " + shapeToken(results[i].shape) + " " +
            roleToken(results[i].role) + "\n";
  return text;
}

namespace {

std::vector<std::string> splitFields(const std::string &line) {
  std::vector<std::string> fields;
  std::istringstream is(line);
  std::string field;
  while (is >> field)
    fields.push_back(field);
  return fields;
}

bool parseCount(const std::string &text, int64_t &value) {
  if (text.empty() || text.size() > 18)
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9')
      return false;
    value = value * 10 + (c - '0');
  }
  return true;
}

bool parseDType(const std::string &text, NpyDType &dtype) {
  for (NpyDType d : {NpyDType::F32, NpyDType::F64, NpyDType::I32, NpyDType::I64,
                     NpyDType::Bool})
    if (text == dtypeToken(d)) {
      dtype = d;
      return true;
    }
  return false;
}

bool parseShape(const std::string &text, std::vector<int64_t> &shape) {
  shape.clear();
  if (text == "scalar")
    return true;
  size_t start = 0;
  while (true) {
    size_t x = text.find('x', start);
    int64_t d;
    if (!parseCount(text.substr(start, x - start), d))
      return false;
    shape.push_back(d);
    if (x == std::string::npos)
      return true;
    start = x + 1;
  }
}

} // namespace

bool parseSignature(const std::string &text, StepSignature &out,
                    std::string &error) {
  StepSignature sig;
  std::istringstream is(text);
  std::string line;
  int lineNo = 0;
  bool sawHeader = false, sawEntry = false, named = false;
  auto bad = [&](const std::string &why) {
    error = "malformed step signature, line " + std::to_string(lineNo) + " ('" +
            line + "'): " + why;
    return false;
  };
  while (std::getline(is, line)) {
    ++lineNo;
    std::vector<std::string> f = splitFields(line);
    if (f.empty())
      continue;
    if (!sawHeader) {
      int64_t version;
      if (f.size() != 2 || f[0] != "ga-step" || !parseCount(f[1], version))
        return bad("expected 'ga-step VERSION'");
      if (version < 1 || version > GA_STEP_ABI_VERSION)
        return bad("version " + std::to_string(version) +
                   ", this runtime reads versions 1 to " +
                   std::to_string(GA_STEP_ABI_VERSION) +
                   ": recompile the step with this ga-compile");
      named = version >= 2;
      sawHeader = true;
      continue;
    }
    if (f[0] == "entry" && f.size() == 2) {
      sig.entry = f[1];
      sawEntry = true;
    } else if (f[0] == "ranks" && f.size() == 2) {
      if (!parseCount(f[1], sig.ranks) || sig.ranks < 1)
        return bad("the rank count must be a positive integer");
    } else if ((f[0] == "input" && f.size() == 4) ||
               (f[0] == "result" && f.size() == 5)) {
      bool input = f[0] == "input";
      std::vector<TensorSpec> &list = input ? sig.inputs : sig.results;
      int64_t index;
      if (!parseCount(f[1], index) || index != (int64_t)list.size())
        return bad("expected " + f[0] + " #" + std::to_string(list.size()));
      TensorSpec spec;
      if (!parseDType(f[2], spec.dtype))
        return bad("unknown element type '" + f[2] + "'");
      if (!parseShape(f[3], spec.shape))
        return bad("bad shape '" + f[3] + "'");
      if (!input) {
        if (f[4] == "loss")
          spec.role = TensorRole::Loss;
        else if (f[4] == "gradient")
          spec.role = TensorRole::Gradient;
        else if (f[4] == "aux")
          spec.role = TensorRole::Aux;
        else
          return bad("unknown role '" + f[4] + "'");
      }
      list.push_back(std::move(spec));
    } else if (named && f[0] == "name" && f.size() == 3) {
      int64_t index;
      if (!parseCount(f[1], index) || index >= (int64_t)sig.inputs.size())
        return bad("a name for input #" + f[1] +
                   ", which is not listed "
                   "before it");
      if (!sig.inputs[index].name.empty())
        return bad("input #" + f[1] + " is named twice");
      sig.inputs[index].name = f[2];
    } else {
      return bad("unknown record");
    }
  }
  if (!sawHeader) {
    error = "malformed step signature: empty";
    return false;
  }
  if (!sawEntry) {
    error = "malformed step signature: no 'entry' record";
    return false;
  }
  out = std::move(sig);
  return true;
}

const StepSignature *cachedSignature(const char *text, std::string &error) {
  if (!text) {
    error = "the step has no signature";
    return nullptr;
  }
  static std::mutex mutex;
  static auto *cache =
      new std::map<std::string, std::unique_ptr<StepSignature>>;
  std::lock_guard<std::mutex> lock(mutex);
  auto &entry = (*cache)[text];
  if (!entry) {
    auto parsed = std::make_unique<StepSignature>();
    if (!parseSignature(text, *parsed, error)) {
      cache->erase(text);
      return nullptr;
    }
    entry = std::move(parsed);
  }
  return entry.get();
}

std::string checkArgument(const StepSignature &signature, size_t index,
                          const NpyArray &array, const std::string &path) {
  const TensorSpec &want = signature.inputs[index];
  if (array.dtype == want.dtype && array.shape == want.shape)
    return "";
  // "(NAME, 'PATH')" for a named argument, else "('PATH')".
  std::string what =
      (want.name.empty() ? "" : want.name + ", ") + "'" + path + "'";
  return "argument #" + std::to_string(index) + " (" + what + "): expected " +
         want.describe() + ", got " + npyDTypeName(array.dtype) + " " +
         array.shapeString();
}

std::string checkArgumentCount(const StepSignature &signature, size_t given) {
  if (given == signature.inputs.size())
    return "";
  return "@" + signature.entry + " takes " +
         std::to_string(signature.inputs.size()) + " argument(s), got " +
         std::to_string(given) + " .npy file(s)";
}

std::string multiIndex(const std::vector<int64_t> &shape, int64_t flat) {
  std::vector<int64_t> index(shape.size());
  int64_t rest = flat;
  for (int d = (int)shape.size() - 1; d >= 0; --d) {
    index[d] = shape[d] ? rest % shape[d] : 0;
    rest = shape[d] ? rest / shape[d] : 0;
  }
  std::string text = "[";
  for (size_t k = 0; k < index.size(); ++k)
    text += (k ? ", " : "") + std::to_string(index[k]);
  return text + "]";
}

/// "nan", "inf", "-inf" or the %g text, as LLVM's formatv prints doubles.
static std::string valueText(double v) {
  if (std::isnan(v))
    return "nan";
  if (std::isinf(v))
    return v < 0 ? "-inf" : "inf";
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%g", v);
  return buffer;
}

StepSummary summarize(const StepSignature &signature,
                      const std::vector<NpyArray> &results) {
  StepSummary s;
  s.lossIndex = signature.lossIndex();
  if (!s.lossIndex)
    for (size_t i = 0; i < results.size(); ++i)
      if (results[i].shape.empty() && (results[i].dtype == NpyDType::F32 ||
                                       results[i].dtype == NpyDType::F64)) {
        s.lossIndex = i;
        break;
      }
  char line[128];
  if (s.lossIndex) {
    s.loss = results[*s.lossIndex].at(0);
    std::snprintf(line, sizeof line, "loss: %.9g\n", s.loss);
    s.text += line;
    if (!std::isfinite(s.loss))
      s.nonFinite.push_back("the loss (result #" +
                            std::to_string(*s.lossIndex) + ") is " +
                            valueText(s.loss));
  }
  double sum = 0;
  for (size_t i = 0; i < results.size(); ++i) {
    if (signature.results[i].role != TensorRole::Gradient)
      continue;
    s.hasGradients = true;
    for (int64_t e = 0, n = results[i].numElements(); e < n; ++e) {
      double v = results[i].at(e);
      sum += v * v;
    }
  }
  if (s.hasGradients) {
    s.gradNorm = std::sqrt(sum);
    std::snprintf(line, sizeof line, "grad_norm: %.9g\n", s.gradNorm);
    s.text += line;
    if (!std::isfinite(s.gradNorm))
      s.nonFinite.push_back(
          "the gradient norm is " + valueText(s.gradNorm) +
          " (a NaN or infinite input, or an overflow, reaches the gradients)");
  }
  return s;
}

/// mkdir -p.
static bool makeDirectories(const std::string &dir, std::string &error) {
  for (size_t pos = 1; pos <= dir.size(); ++pos) {
    if (pos != dir.size() && dir[pos] != '/')
      continue;
    std::string prefix = dir.substr(0, pos);
    struct stat st;
    if (::stat(prefix.c_str(), &st) == 0) {
      if (S_ISDIR(st.st_mode))
        continue;
      error = "cannot create '" + dir + "': '" + prefix +
              "' exists and is not a directory";
      return false;
    }
    if (::mkdir(prefix.c_str(), 0777) != 0 && errno != EEXIST) {
      error = "cannot create '" + dir + "': " + std::strerror(errno);
      return false;
    }
  }
  return true;
}

bool writeResults(const std::string &dir, const std::vector<NpyArray> &results,
                  std::string &error) {
  if (!makeDirectories(dir, error))
    return false;
  for (size_t i = 0; i < results.size(); ++i)
    if (!writeNpy(dir + "/result" + std::to_string(i) + ".npy", results[i],
                  error))
      return false;
  return true;
}

} // namespace ga
