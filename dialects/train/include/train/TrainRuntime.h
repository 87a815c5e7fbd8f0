//===- TrainRuntime.h - Runtime functions of the train ops ------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// The lowered forms of train.rank and train.all_reduce call functions that
// the runner provides (ga-run implements them with MPI). Their C ABI, with
// MLIR's default calling convention (an unranked memref is passed as its
// rank and a pointer to the ranked descriptor):
//
//   int64_t ga_rank(void);
//   void ga_all_reduce_f32(int64_t rank, void *descriptor, int32_t kind);
//   (and _f64, _i32, _i64; kind 0 = sum, 1 = avg; in place; the buffer is
//   contiguous: bufferization copies a strided one first.)
//   void ga_reduce_scatter_f32(int64_t inRank, void *in, int64_t outRank,
//                              void *out, int32_t kind);
//   void ga_all_gather_f32(int64_t inRank, void *in, int64_t outRank,
//                          void *out);
//   (and _f64, _i32, _i64; `in` and `out` are contiguous vectors, `in` of
//   r times out's elements for a reduce-scatter, `out` of r times in's for
//   an all-gather, r the number of ranks.)
//   void ga_report_error(int32_t code, int64_t argument, int64_t position,
//                        int64_t value, int64_t bound, int64_t ignore);
//   (train.check_labels; see ga/Runtime/Errors.h.)
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRAIN_TRAINRUNTIME_H
#define GA_TRAIN_TRAINRUNTIME_H

#include "mlir/Dialect/Func/IR/FuncOps.h"
#include "mlir/IR/Builders.h"
#include "llvm/ADT/StringRef.h"
#include <string>

namespace mlir {
class DialectRegistry;
} // namespace mlir

namespace ga {
namespace train {

/// `int64_t ga_rank(void)`: the data-parallel rank of this process.
inline constexpr llvm::StringLiteral kRankFunction = "ga_rank";

/// `void ga_report_error(i32 code, i64 argument, i64 position, i64 value,
/// i64 bound, i64 ignore)`: the error path of compiled steps (see
/// ga/Runtime/Errors.h).
inline constexpr llvm::StringLiteral kReportErrorFunction = "ga_report_error";

/// `void ga_report_assertion(ptr message, i64 position)`: a failed
/// `cf.assert` of a step, with its message and the first failing position
/// of its iteration space (-1 for an assert outside loops); see
/// ga/Runtime/Errors.h.
inline constexpr llvm::StringLiteral kReportAssertionFunction =
    "ga_report_assertion";

/// The runtime function `ga_<collective>_<type>` (`collective`:
/// `all_reduce`, `reduce_scatter` or `all_gather`) for buffers of
/// `elementType`, or an empty string for an element type that the runtime's
/// collectives do not take.
std::string getCollectiveFunctionName(llvm::StringRef collective,
                                      mlir::Type elementType);

/// The private declaration `name : type` in the symbol table that holds
/// `from`, inserted at its start if missing. Emits an error at `from` and
/// returns null when a symbol of that name exists with another type.
mlir::func::FuncOp getOrInsertRuntimeFunction(mlir::OpBuilder &builder,
                                              mlir::Operation *from,
                                              llvm::StringRef name,
                                              mlir::FunctionType type);

/// Registers the BufferizableOpInterface models of train.all_reduce,
/// train.reduce_scatter and train.all_gather.
void registerBufferizableOpInterfaceExternalModels(
    mlir::DialectRegistry &registry);

} // namespace train
} // namespace ga

#endif // GA_TRAIN_TRAINRUNTIME_H
