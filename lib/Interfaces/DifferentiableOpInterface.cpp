//===- DifferentiableOpInterface.cpp - Adjoints of operations -------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Interfaces/DifferentiableOpInterface.h"

#include "ga/Interfaces/DifferentiableOpInterface.cpp.inc"
