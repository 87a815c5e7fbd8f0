//===- TrainOps.h - Operations of the train dialect -------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#ifndef GA_TRAIN_TRAINOPS_H
#define GA_TRAIN_TRAINOPS_H

#include "mlir/Bytecode/BytecodeOpInterface.h"
#include "mlir/IR/BuiltinTypes.h"
#include "mlir/IR/OpDefinition.h"
#include "mlir/IR/OpImplementation.h"
#include "mlir/Interfaces/ControlFlowInterfaces.h"
#include "mlir/Interfaces/SideEffectInterfaces.h"
#include "train/TrainDialect.h"

#include "train/TrainEnums.h.inc"

#define GET_OP_CLASSES
#include "train/TrainOps.h.inc"

#endif // GA_TRAIN_TRAINOPS_H
