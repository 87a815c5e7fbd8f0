//===- Npy.h - NumPy .npy files ---------------------------------*- C++ -*-===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Reading and writing the NumPy `.npy` format (versions 1.0 to 3.0,
// C order, little-endian float32/float64/int32/int64 and bool), which ga-run,
// ga-exec and the tests use for tensors in and out. Part of the runtime:
// standard C++ only, no MLIR or LLVM.
//
//===----------------------------------------------------------------------===//

#ifndef GA_RUNTIME_NPY_H
#define GA_RUNTIME_NPY_H

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace ga {

/// The element types steps exchange. Bool is NumPy's `bool` (`|b1`): one
/// byte per element, 0 or 1, as a tensor of `i1` is in memory.
enum class NpyDType { F32, F64, I32, I64, Bool };

/// NumPy's name of `dtype` ("float32", ...).
const char *npyDTypeName(NpyDType dtype);
/// Bytes per element.
size_t npyDTypeSize(NpyDType dtype);
/// A shape as NumPy prints it: "(8, 16)", "(5,)", "()".
std::string npyShapeString(const std::vector<int64_t> &shape);

/// A dense C-order array.
struct NpyArray {
  NpyDType dtype = NpyDType::F32;
  std::vector<int64_t> shape;
  std::vector<char> data; ///< numElements * element size bytes.

  int64_t numElements() const;
  /// "(8, 16)", as NumPy prints shapes.
  std::string shapeString() const;
  /// Element `i` converted to double.
  double at(int64_t i) const;
};

/// Parses `.npy` bytes into `out`; `name` is used in error messages. The
/// element and byte counts of the header's shape are computed with overflow
/// checks and must match the payload exactly, so numElements() of a parsed
/// array is exact. Returns false, with the reason in `error`, on failure.
bool parseNpy(std::string_view bytes, const std::string &name, NpyArray &out,
              std::string &error);
/// Reads a `.npy` file; only a regular file (not a device or a pipe).
bool readNpy(const std::string &path, NpyArray &out, std::string &error);
/// Writes `array` as a version 1.0 `.npy` file.
bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error);

} // namespace ga

#endif // GA_RUNTIME_NPY_H
