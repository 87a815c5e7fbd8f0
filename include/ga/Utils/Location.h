//===- Location.h - Locations as users read them ----------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//
//
// A location in a message that is not a diagnostic's own (a remark naming
// another place, a summary line): `file:line:col`.
//
//===----------------------------------------------------------------------===//

#ifndef GA_UTILS_LOCATION_H
#define GA_UTILS_LOCATION_H

#include "mlir/IR/Location.h"
#include "llvm/Support/raw_ostream.h"

namespace ga {

/// `file:line:col` for a file location (through a name), the printed
/// location otherwise.
inline void printLocation(llvm::raw_ostream &os, mlir::Location loc) {
  if (auto fileLoc = llvm::dyn_cast<mlir::FileLineColLoc>(loc)) {
    os << fileLoc.getFilename().getValue() << ":" << fileLoc.getLine() << ":"
       << fileLoc.getColumn();
    return;
  }
  if (auto nameLoc = llvm::dyn_cast<mlir::NameLoc>(loc))
    return printLocation(os, nameLoc.getChildLoc());
  os << loc;
}

} // namespace ga

#endif // GA_UTILS_LOCATION_H
