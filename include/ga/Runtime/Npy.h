//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Reading and writing the NumPy `.npy` format (versions 1.0 to 3.0,
// C order, little-endian float32/float64/int32/int64), which ga-run uses
// for tensors in and out.
//
//===----------------------------------------------------------------------===//

#ifndef GA_RUNTIME_NPY_H
#define GA_RUNTIME_NPY_H

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/SmallVector.h"
#include "llvm/ADT/StringRef.h"
#include "llvm/Support/Error.h"

#include <cstdint>
#include <string>
#include <vector>

namespace ga {

/// The element types ga-run exchanges.
enum class NpyDType { F32, F64, I32, I64 };

/// NumPy's name of `dtype` ("float32", ...).
llvm::StringRef npyDTypeName(NpyDType dtype);
/// Bytes per element.
size_t npyDTypeSize(NpyDType dtype);
/// A shape as NumPy prints it: "(8, 16)", "(5,)", "()".
std::string npyShapeString(llvm::ArrayRef<int64_t> shape);

/// A dense C-order array.
struct NpyArray {
  NpyDType dtype = NpyDType::F32;
  llvm::SmallVector<int64_t> shape;
  std::vector<char> data; ///< numElements * element size bytes.

  int64_t numElements() const;
  /// "(8, 16)", as NumPy prints shapes.
  std::string shapeString() const;
};

/// Parses `.npy` bytes; `name` is used in error messages. The element and
/// byte counts of the header's shape are computed with overflow checks and
/// must match the payload exactly, so numElements() of a parsed array is
/// exact.
llvm::Expected<NpyArray> parseNpy(llvm::StringRef bytes, llvm::StringRef name);
/// Reads a `.npy` file; only a regular file (not a device or a pipe).
llvm::Expected<NpyArray> readNpy(llvm::StringRef path);
/// Writes `array` as a version 1.0 `.npy` file.
llvm::Error writeNpy(llvm::StringRef path, const NpyArray &array);

} // namespace ga

#endif // GA_RUNTIME_NPY_H
