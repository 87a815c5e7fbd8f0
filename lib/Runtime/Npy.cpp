//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Npy.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MathExtras.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/raw_ostream.h"

using namespace llvm;

namespace ga {

StringRef npyDTypeName(NpyDType dtype) {
  switch (dtype) {
  case NpyDType::F32:
    return "float32";
  case NpyDType::F64:
    return "float64";
  case NpyDType::I32:
    return "int32";
  case NpyDType::I64:
    return "int64";
  }
  llvm_unreachable("unknown dtype");
}

size_t npyDTypeSize(NpyDType dtype) {
  return dtype == NpyDType::F32 || dtype == NpyDType::I32 ? 4 : 8;
}

static StringRef descrOf(NpyDType dtype) {
  switch (dtype) {
  case NpyDType::F32:
    return "<f4";
  case NpyDType::F64:
    return "<f8";
  case NpyDType::I32:
    return "<i4";
  case NpyDType::I64:
    return "<i8";
  }
  llvm_unreachable("unknown dtype");
}

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

std::string npyShapeString(ArrayRef<int64_t> shape) {
  std::string text = "(";
  for (auto [i, d] : llvm::enumerate(shape))
    text += (i ? ", " : "") + std::to_string(d);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::string NpyArray::shapeString() const { return npyShapeString(shape); }

static Error malformed(StringRef name, const Twine &why) {
  return createStringError(inconvertibleErrorCode(),
                           "'" + name + "' is not a valid .npy file: " + why);
}

/// The value text after `'key':` in a header dictionary.
static std::optional<StringRef> headerValue(StringRef header, StringRef key) {
  size_t pos = header.find(("'" + key + "'").str());
  if (pos == StringRef::npos)
    return std::nullopt;
  StringRef rest = header.drop_front(pos + key.size() + 2).ltrim();
  if (!rest.consume_front(":"))
    return std::nullopt;
  return rest.ltrim();
}

Expected<NpyArray> parseNpy(StringRef bytes, StringRef name) {
  if (!bytes.starts_with("\x93NUMPY"))
    return malformed(name, "missing the \\x93NUMPY magic string");
  if (bytes.size() < 10)
    return malformed(name, "truncated header");
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen, start;
  auto byteAt = [&](size_t i) {
    return static_cast<size_t>(static_cast<unsigned char>(bytes[i]));
  };
  if (major == 1) {
    headerLen = byteAt(8) | byteAt(9) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return malformed(name, "truncated header");
    headerLen =
        byteAt(8) | byteAt(9) << 8 | byteAt(10) << 16 | byteAt(11) << 24;
    start = 12;
  } else {
    return malformed(name, "unsupported format version " + Twine(major));
  }
  if (bytes.size() < start + headerLen)
    return malformed(name, "truncated header");
  StringRef header = bytes.substr(start, headerLen);

  NpyArray array;
  std::optional<StringRef> descr = headerValue(header, "descr");
  if (!descr || descr->size() < 2 || !descr->consume_front("'"))
    return malformed(name, "no 'descr' in the header");
  StringRef code = descr->take_until([](char c) { return c == '\''; });
  if (code == "<f4")
    array.dtype = NpyDType::F32;
  else if (code == "<f8")
    array.dtype = NpyDType::F64;
  else if (code == "<i4")
    array.dtype = NpyDType::I32;
  else if (code == "<i8")
    array.dtype = NpyDType::I64;
  else
    return createStringError(
        inconvertibleErrorCode(),
        "'" + name + "' has dtype '" + code +
            "'; ga-run reads little-endian float32, float64, int32 and int64");

  std::optional<StringRef> fortran = headerValue(header, "fortran_order");
  if (!fortran)
    return malformed(name, "no 'fortran_order' in the header");
  if (fortran->starts_with("True"))
    return createStringError(inconvertibleErrorCode(),
                             "'" + name +
                                 "' is in Fortran order; write it in C order "
                                 "(numpy.ascontiguousarray)");

  std::optional<StringRef> shapeText = headerValue(header, "shape");
  if (!shapeText || !shapeText->consume_front("("))
    return malformed(name, "no 'shape' tuple in the header");
  StringRef dims = shapeText->take_until([](char c) { return c == ')'; });
  if (dims.size() == shapeText->size())
    return malformed(name, "unterminated 'shape' tuple");
  SmallVector<StringRef> parts;
  dims.split(parts, ',', -1, /*KeepEmpty=*/false);
  for (StringRef part : parts) {
    part = part.trim();
    if (part.empty())
      continue;
    int64_t d;
    if (part.getAsInteger(10, d) || d < 0)
      return malformed(name, "bad dimension '" + part + "' in 'shape'");
    array.shape.push_back(d);
  }

  // Checked arithmetic: a header can promise any shape.
  int64_t elements = 1, bytesWanted = 0;
  for (int64_t d : array.shape)
    if (MulOverflow(elements, d, elements))
      return malformed(name, "the shape " + array.shapeString() +
                                 " has more elements than a 64-bit count "
                                 "holds");
  if (MulOverflow(elements, static_cast<int64_t>(npyDTypeSize(array.dtype)),
                  bytesWanted))
    return malformed(name, "the shape " + array.shapeString() +
                               " has more bytes than a 64-bit count holds");
  uint64_t expected = static_cast<uint64_t>(bytesWanted);
  StringRef payload = bytes.drop_front(start + headerLen);
  if (payload.size() != expected)
    return malformed(name, "the header promises " + Twine(expected) +
                               " data bytes (" + npyDTypeName(array.dtype) +
                               " " + array.shapeString() + "), the file has " +
                               Twine(payload.size()));
  array.data.assign(payload.begin(), payload.end());
  return array;
}

Expected<NpyArray> readNpy(StringRef path) {
  // Only regular files: a device (/dev/zero) or a pipe has no size to check
  // the header against and could be read without bound.
  sys::fs::file_status status;
  if (std::error_code ec = sys::fs::status(path, status))
    return createStringError(ec, "cannot read '" + path + "': " + ec.message());
  if (status.type() != sys::fs::file_type::regular_file)
    return createStringError(inconvertibleErrorCode(),
                             "cannot read '" + path +
                                 "': not a regular file (a .npy file is "
                                 "read whole, and its size checked)");
  ErrorOr<std::unique_ptr<MemoryBuffer>> buffer =
      MemoryBuffer::getFile(path, /*IsText=*/false,
                            /*RequiresNullTerminator=*/false);
  if (!buffer)
    return createStringError(buffer.getError(),
                             "cannot read '" + path +
                                 "': " + buffer.getError().message());
  return parseNpy((*buffer)->getBuffer(), path);
}

Error writeNpy(StringRef path, const NpyArray &array) {
  std::string header =
      "{'descr': '" + descrOf(array.dtype).str() +
      "', 'fortran_order': False, 'shape': " + array.shapeString() + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::error_code ec;
  raw_fd_ostream os(path, ec, sys::fs::OF_None);
  if (ec)
    return createStringError(ec,
                             "cannot write '" + path + "': " + ec.message());
  os << "\x93NUMPY" << char(1) << char(0) << char(header.size() & 0xff)
     << char(header.size() >> 8) << header;
  os.write(array.data.data(), array.data.size());
  return Error::success();
}

} // namespace ga
