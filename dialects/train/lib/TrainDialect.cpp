//===- TrainDialect.cpp - The train dialect --------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "train/TrainDialect.h"
#include "train/TrainOps.h"

using namespace mlir;
using namespace ga::train;

#include "train/TrainDialect.cpp.inc"

void TrainDialect::initialize() {
  addOperations<
#define GET_OP_LIST
#include "train/TrainOps.cpp.inc"
      >();
}
