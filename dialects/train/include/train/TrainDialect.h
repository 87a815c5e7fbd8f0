//===- TrainDialect.h - The train dialect -----------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRAIN_TRAINDIALECT_H
#define GA_TRAIN_TRAINDIALECT_H

#include "mlir/IR/BuiltinAttributes.h"
#include "mlir/IR/Dialect.h"
#include "mlir/IR/Operation.h"

#include "train/TrainDialect.h.inc"

#endif // GA_TRAIN_TRAINDIALECT_H
