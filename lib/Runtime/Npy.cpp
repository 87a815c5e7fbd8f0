//===- Npy.cpp - NumPy .npy files -----------------------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Npy.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <sys/stat.h>

namespace ga {

const char *npyDTypeName(NpyDType dtype) {
  switch (dtype) {
  case NpyDType::F32:
    return "float32";
  case NpyDType::F64:
    return "float64";
  case NpyDType::I32:
    return "int32";
  case NpyDType::I64:
    return "int64";
  case NpyDType::Bool:
    return "bool";
  }
  return "unknown";
}

size_t npyDTypeSize(NpyDType dtype) {
  switch (dtype) {
  case NpyDType::F32:
  case NpyDType::I32:
    return 4;
  case NpyDType::F64:
  case NpyDType::I64:
    return 8;
  case NpyDType::Bool:
    return 1;
  }
  return 8;
}

static const char *descrOf(NpyDType dtype) {
  switch (dtype) {
  case NpyDType::F32:
    return "<f4";
  case NpyDType::F64:
    return "<f8";
  case NpyDType::I32:
    return "<i4";
  case NpyDType::I64:
    return "<i8";
  case NpyDType::Bool:
    return "|b1";
  }
  return "";
}

int64_t NpyArray::numElements() const {
  int64_t n = 1;
  for (int64_t d : shape)
    n *= d;
  return n;
}

double NpyArray::at(int64_t i) const {
  switch (dtype) {
  case NpyDType::F32:
    return reinterpret_cast<const float *>(data.data())[i];
  case NpyDType::F64:
    return reinterpret_cast<const double *>(data.data())[i];
  case NpyDType::I32:
    return reinterpret_cast<const int32_t *>(data.data())[i];
  case NpyDType::I64:
    return static_cast<double>(
        reinterpret_cast<const int64_t *>(data.data())[i]);
  case NpyDType::Bool:
    return data[i] != 0;
  }
  return 0;
}

std::string npyShapeString(const std::vector<int64_t> &shape) {
  std::string text = "(";
  for (size_t i = 0; i < shape.size(); ++i)
    text += (i ? ", " : "") + std::to_string(shape[i]);
  return text + (shape.size() == 1 ? ",)" : ")");
}

std::string NpyArray::shapeString() const { return npyShapeString(shape); }

namespace {

bool malformed(const std::string &name, const std::string &why,
               std::string &error) {
  error = "'" + name + "' is not a valid .npy file: " + why;
  return false;
}

bool isSpace(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

std::string_view ltrim(std::string_view s) {
  while (!s.empty() && isSpace(s.front()))
    s.remove_prefix(1);
  return s;
}

std::string_view trim(std::string_view s) {
  s = ltrim(s);
  while (!s.empty() && isSpace(s.back()))
    s.remove_suffix(1);
  return s;
}

/// The value text after `'key':` in a header dictionary.
bool headerValue(std::string_view header, const std::string &key,
                 std::string_view &value) {
  size_t pos = header.find("'" + key + "'");
  if (pos == std::string_view::npos)
    return false;
  std::string_view rest = ltrim(header.substr(pos + key.size() + 2));
  if (rest.empty() || rest.front() != ':')
    return false;
  value = ltrim(rest.substr(1));
  return true;
}

/// A non-negative decimal integer, the whole of `text`.
bool parseDimension(std::string_view text, int64_t &value) {
  if (text.empty())
    return false;
  value = 0;
  for (char c : text) {
    if (c < '0' || c > '9' ||
        __builtin_mul_overflow(value, int64_t(10), &value) ||
        __builtin_add_overflow(value, int64_t(c - '0'), &value))
      return false;
  }
  return true;
}

/// The header's text and where the data start, after the magic string,
/// the version and the header's length.
bool headerOf(std::string_view bytes, const std::string &name,
              std::string_view &header, size_t &dataStart, std::string &error) {
  if (bytes.substr(0, 6) != "\x93NUMPY")
    return malformed(name, "missing the \\x93NUMPY magic string", error);
  if (bytes.size() < 10)
    return malformed(name, "truncated header", error);
  unsigned major = static_cast<unsigned char>(bytes[6]);
  size_t headerLen = 0, start = 0;
  auto byteAt = [&](size_t i) {
    return static_cast<size_t>(static_cast<unsigned char>(bytes[i]));
  };
  if (major == 1) {
    headerLen = byteAt(8) | byteAt(9) << 8;
    start = 10;
  } else if (major == 2 || major == 3) {
    if (bytes.size() < 12)
      return malformed(name, "truncated header", error);
    headerLen =
        byteAt(8) | byteAt(9) << 8 | byteAt(10) << 16 | byteAt(11) << 24;
    start = 12;
  } else {
    return malformed(
        name, "unsupported format version " + std::to_string(major), error);
  }
  if (bytes.size() < start + headerLen)
    return malformed(name, "truncated header", error);
  header = bytes.substr(start, headerLen);
  dataStart = start + headerLen;
  return true;
}

/// The element type the header's 'descr' names.
bool parseDescr(std::string_view header, const std::string &name,
                NpyDType &dtype, std::string &error) {
  std::string_view descr;
  if (!headerValue(header, "descr", descr) || descr.size() < 2 ||
      descr.front() != '\'')
    return malformed(name, "no 'descr' in the header", error);
  descr.remove_prefix(1);
  std::string_view code = descr.substr(0, descr.find('\''));
  if (code == "<f4")
    dtype = NpyDType::F32;
  else if (code == "<f8")
    dtype = NpyDType::F64;
  else if (code == "<i4")
    dtype = NpyDType::I32;
  else if (code == "<i8")
    dtype = NpyDType::I64;
  else if (code == "|b1")
    dtype = NpyDType::Bool;
  else {
    error = "'" + name + "' has dtype '" + std::string(code) +
            "'; steps take little-endian float32, float64, int32 and int64, "
            "and bool";
    return false;
  }

  return true;
}

/// The dimensions of the header's 'shape' tuple.
bool parseShape(std::string_view header, const std::string &name,
                std::vector<int64_t> &shape, std::string &error) {
  std::string_view shapeText;
  if (!headerValue(header, "shape", shapeText) || shapeText.empty() ||
      shapeText.front() != '(')
    return malformed(name, "no 'shape' tuple in the header", error);
  shapeText.remove_prefix(1);
  size_t close = shapeText.find(')');
  if (close == std::string_view::npos)
    return malformed(name, "unterminated 'shape' tuple", error);
  std::string_view dims = shapeText.substr(0, close);
  while (!dims.empty()) {
    size_t comma = dims.find(',');
    std::string_view part = trim(dims.substr(0, comma));
    dims = comma == std::string_view::npos ? std::string_view()
                                           : dims.substr(comma + 1);
    if (part.empty())
      continue;
    int64_t d;
    if (!parseDimension(part, d))
      return malformed(
          name, "bad dimension '" + std::string(part) + "' in 'shape'", error);
    shape.push_back(d);
  }

  return true;
}

} // namespace

bool parseNpy(std::string_view bytes, const std::string &name, NpyArray &out,
              std::string &error) {
  std::string_view header;
  size_t dataStart = 0;
  if (!headerOf(bytes, name, header, dataStart, error))
    return false;
  NpyArray array;
  if (!parseDescr(header, name, array.dtype, error))
    return false;
  std::string_view fortran;
  if (!headerValue(header, "fortran_order", fortran))
    return malformed(name, "no 'fortran_order' in the header", error);
  if (fortran.substr(0, 4) == "True") {
    error = "'" + name +
            "' is in Fortran order; write it in C order "
            "(numpy.ascontiguousarray)";
    return false;
  }

  if (!parseShape(header, name, array.shape, error))
    return false;

  // Checked arithmetic: a header can promise any shape.
  int64_t elements = 1, bytesWanted = 0;
  for (int64_t d : array.shape)
    if (__builtin_mul_overflow(elements, d, &elements))
      return malformed(name,
                       "the shape " + array.shapeString() +
                           " has more elements than a 64-bit count holds",
                       error);
  if (__builtin_mul_overflow(elements,
                             static_cast<int64_t>(npyDTypeSize(array.dtype)),
                             &bytesWanted))
    return malformed(name,
                     "the shape " + array.shapeString() +
                         " has more bytes than a 64-bit count holds",
                     error);
  uint64_t expected = static_cast<uint64_t>(bytesWanted);
  std::string_view payload = bytes.substr(dataStart);
  if (payload.size() != expected)
    return malformed(name,
                     "the header promises " + std::to_string(expected) +
                         " data bytes (" + npyDTypeName(array.dtype) + " " +
                         array.shapeString() + "), the file has " +
                         std::to_string(payload.size()),
                     error);
  // A bool is one byte, 0 or 1 (a step reads it as an i1; any other byte
  // would be read as whatever its lowest bit says, or worse).
  if (array.dtype == NpyDType::Bool)
    for (size_t i = 0; i < payload.size(); ++i)
      if (payload[i] != 0 && payload[i] != 1)
        return malformed(
            name,
            "bool element " + std::to_string(i) + " is the byte " +
                std::to_string(static_cast<unsigned char>(payload[i])) +
                ", expected 0 or 1",
            error);
  array.data.assign(payload.begin(), payload.end());
  out = std::move(array);
  return true;
}

bool readNpy(const std::string &path, NpyArray &out, std::string &error) {
  // Only regular files: a device (/dev/zero) or a pipe has no size to check
  // the header against and could be read without bound.
  struct stat status;
  if (::stat(path.c_str(), &status) != 0) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  if (!S_ISREG(status.st_mode)) {
    error = "cannot read '" + path +
            "': not a regular file (a .npy file is read whole, and its size "
            "checked)";
    return false;
  }
  FILE *file = std::fopen(path.c_str(), "rb");
  if (!file) {
    error = "cannot read '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::string bytes(static_cast<size_t>(status.st_size), '\0');
  size_t got = bytes.empty() ? 0 : std::fread(&bytes[0], 1, bytes.size(), file);
  bool readError = std::ferror(file);
  std::fclose(file);
  if (readError || got != bytes.size()) {
    error = "cannot read '" + path + "': a read error";
    return false;
  }
  return parseNpy(bytes, path, out, error);
}

bool writeNpy(const std::string &path, const NpyArray &array,
              std::string &error) {
  std::string header =
      std::string("{'descr': '") + descrOf(array.dtype) +
      "', 'fortran_order': False, 'shape': " + array.shapeString() + ", }";
  // Pad with spaces so that the data starts at a multiple of 64 bytes.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  FILE *file = std::fopen(path.c_str(), "wb");
  if (!file) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  std::string prefix = "\x93NUMPY";
  prefix += char(1);
  prefix += char(0);
  prefix += char(header.size() & 0xff);
  prefix += char(header.size() >> 8);
  prefix += header;
  bool ok =
      std::fwrite(prefix.data(), 1, prefix.size(), file) == prefix.size() &&
      std::fwrite(array.data.data(), 1, array.data.size(), file) ==
          array.data.size();
  ok = std::fclose(file) == 0 && ok;
  if (!ok) {
    error = "cannot write '" + path + "': " + std::strerror(errno);
    return false;
  }
  return true;
}

} // namespace ga
