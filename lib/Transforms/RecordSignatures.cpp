//===- RecordSignatures.cpp - Tensor signatures for ga-run ----------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Transforms/Passes.h"

#include "mlir/IR/BuiltinAttributes.h"
#include "train/TrainOps.h"

namespace ga {
#define GEN_PASS_DEF_TRAINRECORDSIGNATURESPASS
#include "ga/Transforms/Passes.h.inc"
} // namespace ga

using namespace mlir;
using namespace ga::train;

namespace {
struct TrainRecordSignaturesPass
    : ga::impl::TrainRecordSignaturesPassBase<TrainRecordSignaturesPass> {
  using Base::Base;

  void runOnOperation() override {
    getOperation().walk([&](func::FuncOp func) {
      if (func.isExternal())
        return;
      Builder b(func.getContext());
      func->setAttr(TrainDialect::SignatureAttrHelper::getNameStr(),
                    TypeAttr::get(func.getFunctionType()));
      // The arguments' names, where ga-import gave them: the lowering
      // drops argument attributes.
      SmallVector<Attribute> names;
      bool named = false;
      for (unsigned i = 0; i < func.getNumArguments(); ++i) {
        auto name = func.getArgAttrOfType<StringAttr>(
            i, TrainDialect::NameAttrHelper::getNameStr());
        named |= static_cast<bool>(name);
        names.push_back(name ? name : b.getStringAttr(""));
      }
      if (named)
        func->setAttr(TrainDialect::ArgumentNamesAttrHelper::getNameStr(),
                      b.getArrayAttr(names));
      auto ret =
          dyn_cast<func::ReturnOp>(func.getBody().back().getTerminator());
      if (!ret)
        return;
      SmallVector<int64_t> gradients;
      for (auto [i, value] : llvm::enumerate(ret.getOperands())) {
        auto step = value.getDefiningOp<StepOp>();
        if (!step)
          continue;
        if (value == step.getLoss())
          func->setAttr(TrainDialect::LossResultAttrHelper::getNameStr(),
                        b.getI64IntegerAttr(i));
        else if (llvm::is_contained(step.getGrads(), value))
          gradients.push_back(i);
      }
      if (!gradients.empty())
        func->setAttr(TrainDialect::GradientResultsAttrHelper::getNameStr(),
                      b.getDenseI64ArrayAttr(gradients));
    });
  }
};
} // namespace
