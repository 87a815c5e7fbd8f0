//===- Choices.h - Options whose values are a set ---------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The options whose values are one of a few names (the pipeline's target,
// GPU format, precision, batch statistics, host offload's copies, the
// exported step's runtime) are enumerations: the compiler compares
// enumerators, never text. Each enumeration lists its spellings once
// (ChoiceNames), in the order of its enumerators; ChoiceParser is the
// command line's parser for it (llvm::cl::parser<E> is specialized to it, so
// that a pass option declared in TableGen with the enumeration as its type
// uses it too): it reads a spelling, refuses any other with the message
// "<option> must be a, b or c, got 'x'", and prints the spelling back, so
// that a pipeline's options print and parse as text on the command line.
//
//===----------------------------------------------------------------------===//

#ifndef GA_UTILS_CHOICES_H
#define GA_UTILS_CHOICES_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/CommandLine.h"
#include "llvm/Support/raw_ostream.h"
#include <optional>
#include <string>

namespace ga {

/// The code generation target of the pipeline, and the runtime an exported
/// step calls.
enum class Target { CPU, CUDA };
/// What target=cuda's kernels become.
enum class GpuFormat { Bin, Fatbin, Isa, None };
/// The step's arithmetic.
enum class Precision { F32, BF16Mixed, BF16 };
/// How a multi-head attention is computed (ga-pipeline's attention).
enum class AttentionForm { Auto, Unfused, Tiles, Library };
/// A parameter-dependent batch statistic without a gradient in a split.
enum class BatchStatistics { Refuse, Prepass };
/// Which stretches host offload may copy.
enum class OffloadCopies { Priced, Hidden };

/// The spellings of an enumeration's values, in the order of its
/// enumerators (specialized below for each).
template <typename E> struct ChoiceNames;
template <> struct ChoiceNames<Target> {
  static constexpr llvm::StringLiteral names[] = {"cpu", "cuda"};
};
template <> struct ChoiceNames<GpuFormat> {
  static constexpr llvm::StringLiteral names[] = {"bin", "fatbin", "isa",
                                                  "none"};
};
template <> struct ChoiceNames<Precision> {
  static constexpr llvm::StringLiteral names[] = {"f32", "bf16-mixed", "bf16"};
};
template <> struct ChoiceNames<AttentionForm> {
  static constexpr llvm::StringLiteral names[] = {"auto", "unfused", "tiles",
                                                  "library"};
};
template <> struct ChoiceNames<BatchStatistics> {
  static constexpr llvm::StringLiteral names[] = {"refuse", "prepass"};
};
template <> struct ChoiceNames<OffloadCopies> {
  static constexpr llvm::StringLiteral names[] = {"priced", "hidden"};
};

template <typename E> llvm::ArrayRef<llvm::StringLiteral> choiceNames() {
  return ChoiceNames<E>::names;
}

/// The spelling of `value`.
template <typename E> llvm::StringRef choiceName(E value) {
  return choiceNames<E>()[static_cast<size_t>(value)];
}

/// The value spelled `text`, if any.
template <typename E> std::optional<E> parseChoice(llvm::StringRef text) {
  llvm::ArrayRef<llvm::StringLiteral> names = choiceNames<E>();
  for (size_t i = 0; i < names.size(); ++i)
    if (names[i] == text)
      return static_cast<E>(i);
  return std::nullopt;
}

/// The spellings as a sentence lists them: "a, b or c".
template <typename E> std::string choiceList() {
  llvm::ArrayRef<llvm::StringLiteral> names = choiceNames<E>();
  std::string list;
  for (size_t i = 0; i < names.size(); ++i) {
    if (i > 0)
      list += i + 1 == names.size() ? " or " : ", ";
    list += names[i].str();
  }
  return list;
}

/// The command line's parser of an enumeration: its spellings in, its
/// spellings out.
template <typename E> class ChoiceParser : public llvm::cl::basic_parser<E> {
public:
  using llvm::cl::basic_parser<E>::basic_parser;

  bool parse(llvm::cl::Option &option, llvm::StringRef, llvm::StringRef text,
             E &value) {
    if (std::optional<E> parsed = parseChoice<E>(text)) {
      value = *parsed;
      return false;
    }
    return option.error(option.ArgStr + " must be " + choiceList<E>() +
                        ", got '" + text + "'");
  }

  /// `--help` shows the choices: `=<cpu|cuda>`.
  llvm::StringRef getValueName() const override {
    static const std::string names = [] {
      std::string joined;
      for (llvm::StringLiteral name : choiceNames<E>())
        joined += (joined.empty() ? "" : "|") + name.str();
      return joined;
    }();
    return names;
  }

  /// --print-options: the value and the default.
  void printOptionDiff(const llvm::cl::Option &option, E value,
                       const llvm::cl::OptionValue<E> &defaultValue,
                       size_t globalWidth) const {
    this->printOptionName(option, globalWidth);
    llvm::outs() << "= " << choiceName(value) << " (default: ";
    if (defaultValue.hasValue())
      llvm::outs() << choiceName(defaultValue.getValue());
    else
      llvm::outs() << "*no default*";
    llvm::outs() << ")\n";
  }

  /// How pass options print a value (mlir::detail::PassOptions).
  static void print(llvm::raw_ostream &os, const E &value) {
    os << choiceName(value);
  }
};

} // namespace ga

/// Every option of these types, declared in C++ or in TableGen, parses with
/// ChoiceParser.
#define GA_CHOICE_PARSER(E)                                                    \
  template <> class llvm::cl::parser<E> : public ga::ChoiceParser<E> {         \
  public:                                                                      \
    using ga::ChoiceParser<E>::ChoiceParser;                                   \
  };
GA_CHOICE_PARSER(ga::Target)
GA_CHOICE_PARSER(ga::GpuFormat)
GA_CHOICE_PARSER(ga::Precision)
GA_CHOICE_PARSER(ga::AttentionForm)
GA_CHOICE_PARSER(ga::BatchStatistics)
GA_CHOICE_PARSER(ga::OffloadCopies)
#undef GA_CHOICE_PARSER

#endif // GA_UTILS_CHOICES_H
