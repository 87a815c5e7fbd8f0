//===- NpyTest.cpp - Unit tests of the .npy reader ------------------------===//
//
// Part of ga-opt: exact gradient accumulation and data parallelism.
//
// Every header case of parseNpy and readNpy: the error says what is wrong,
// and no shape whose counts overflow, or whose byte count wraps around to
// the payload's size, is accepted.
//
//===----------------------------------------------------------------------===//

#include "ga/Runtime/Npy.h"
#include "ga/Runtime/Errors.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/Path.h"
#include "gtest/gtest.h"

#include <string>

using namespace ga;

namespace {

/// A version 1.0 .npy file with `header` (a dictionary) and `payload`.
std::string npy(const std::string &header, const std::string &payload) {
  std::string h = header + "\n";
  std::string bytes = "\x93NUMPY";
  bytes += char(1);
  bytes += char(0);
  bytes += char(h.size() & 0xff);
  bytes += char(h.size() >> 8);
  return bytes + h + payload;
}

std::string dict(const std::string &descr, const std::string &shape) {
  return "{'descr': '" + descr +
         "', 'fortran_order': False, 'shape': " + shape + ", }";
}

/// The error message of parsing `bytes`, or "ok".
std::string parse(const std::string &bytes) {
  NpyArray array;
  std::string error;
  if (parseNpy(bytes, "a.npy", array, error))
    return "ok";
  return error;
}

TEST(Npy, ParsesEveryDType) {
  for (auto [descr, size] : {std::pair<const char *, size_t>{"<f4", 4},
                             {"<f8", 8},
                             {"<i4", 4},
                             {"<i8", 8},
                             {"|b1", 1}}) {
    NpyArray array;
    std::string error;
    ASSERT_TRUE(
        parseNpy(npy(dict(descr, "(2, 3)"), std::string(6 * size, '\0')),
                 "a.npy", array, error))
        << error;
    EXPECT_EQ(array.numElements(), 6);
    EXPECT_EQ(array.shapeString(), "(2, 3)");
  }
}

TEST(Npy, ScalarAndEmpty) {
  EXPECT_EQ(parse(npy(dict("<f4", "()"), std::string(4, '\0'))), "ok");
  EXPECT_EQ(parse(npy(dict("<f4", "(0, 5)"), "")), "ok");
}

TEST(Npy, Magic) {
  EXPECT_NE(parse("NUMPY").find("missing the \\x93NUMPY magic string"),
            std::string::npos);
}

TEST(Npy, TruncatedHeader) {
  std::string bytes = npy(dict("<f4", "(2,)"), std::string(8, '\0'));
  EXPECT_NE(parse(bytes.substr(0, 9)).find("truncated header"),
            std::string::npos);
  EXPECT_NE(parse(bytes.substr(0, 20)).find("truncated header"),
            std::string::npos);
}

TEST(Npy, Version) {
  std::string bytes = npy(dict("<f4", "(2,)"), std::string(8, '\0'));
  bytes[6] = 9;
  EXPECT_NE(parse(bytes).find("unsupported format version 9"),
            std::string::npos);
}

TEST(Npy, MissingKeys) {
  EXPECT_NE(parse(npy("{'fortran_order': False, 'shape': (2,), }", ""))
                .find("no 'descr'"),
            std::string::npos);
  EXPECT_NE(parse(npy("{'descr': '<f4', 'shape': (2,), }", ""))
                .find("no 'fortran_order'"),
            std::string::npos);
  EXPECT_NE(parse(npy("{'descr': '<f4', 'fortran_order': False, }", ""))
                .find("no 'shape' tuple"),
            std::string::npos);
  EXPECT_NE(
      parse(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (2,", ""))
          .find("unterminated 'shape' tuple"),
      std::string::npos);
}

TEST(Npy, BadDimensions) {
  EXPECT_NE(parse(npy(dict("<f4", "(-1,)"), "")).find("bad dimension '-1'"),
            std::string::npos);
  EXPECT_NE(parse(npy(dict("<f4", "(x,)"), "")).find("bad dimension 'x'"),
            std::string::npos);
  // Past int64.
  EXPECT_NE(parse(npy(dict("<f4", "(99999999999999999999,)"), ""))
                .find("bad dimension"),
            std::string::npos);
}

TEST(Npy, ElementCountOverflow) {
  // 2^62 * 2^62 elements: the count overflows 64 bits.
  EXPECT_NE(parse(npy(dict("<f4", "(4611686018427387904, "
                                  "4611686018427387904)"),
                      ""))
                .find("more elements than a 64-bit count holds"),
            std::string::npos);
}

TEST(Npy, ByteCountOverflow) {
  // 2^62 elements fit, 2^62 * 4 bytes do not; unchecked, the byte count
  // wraps to 0 and matches an empty payload.
  EXPECT_NE(parse(npy(dict("<f4", "(4611686018427387904,)"), ""))
                .find("more bytes than a 64-bit count holds"),
            std::string::npos);
  // 2^61 + 1 float64 elements: 8 * (2^61 + 1) wraps to 8 unchecked, the
  // size of this payload.
  EXPECT_NE(
      parse(npy(dict("<f8", "(2305843009213693953,)"), std::string(8, '\0')))
          .find("more bytes than a 64-bit count holds"),
      std::string::npos);
}

TEST(Npy, PayloadSize) {
  EXPECT_NE(parse(npy(dict("<f4", "(3,)"), std::string(8, '\0')))
                .find("the header promises 12 data bytes (float32 (3,)), the "
                      "file has 8"),
            std::string::npos);
  EXPECT_NE(parse(npy(dict("<f4", "(1,)"), std::string(8, '\0')))
                .find("promises 4 data bytes"),
            std::string::npos);
}

TEST(Npy, DTypeAndOrder) {
  EXPECT_NE(parse(npy(dict(">f4", "(1,)"), std::string(4, '\0')))
                .find("has dtype '>f4'"),
            std::string::npos);
  EXPECT_NE(parse(npy("{'descr': '<f4', 'fortran_order': True, 'shape': "
                      "(1,), }",
                      std::string(4, '\0')))
                .find("Fortran order"),
            std::string::npos);
}

/// The error message of reading `path`, or "ok".
std::string read(const std::string &path) {
  NpyArray array;
  std::string error;
  return readNpy(path, array, error) ? "ok" : error;
}

TEST(Npy, BoolBytesAreZeroOrOne) {
  NpyArray array;
  std::string error;
  ASSERT_TRUE(parseNpy(npy(dict("|b1", "(3,)"), std::string("\x01\x00\x01", 3)),
                       "a.npy", array, error))
      << error;
  EXPECT_EQ(array.dtype, NpyDType::Bool);
  EXPECT_EQ(array.at(0), 1.0);
  EXPECT_EQ(array.at(1), 0.0);
  EXPECT_EQ(parse(npy(dict("|b1", "(3,)"), std::string("\x01\x02\x00", 3))),
            "'a.npy' is not a valid .npy file: bool element 1 is the byte 2, "
            "expected 0 or 1");
}

TEST(Npy, OnlyRegularFiles) {
  EXPECT_NE(read("/dev/zero").find("not a regular file"), std::string::npos);
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("npytest", dir));
  EXPECT_NE(read(dir.str().str()).find("not a regular file"),
            std::string::npos);
  llvm::sys::fs::remove(dir);
  EXPECT_NE(read("/nonexistent/a.npy").find("cannot read"), std::string::npos);
}

TEST(Npy, RoundTrip) {
  NpyArray array;
  array.dtype = NpyDType::I64;
  array.shape = {2, 2};
  array.data.assign(32, '\x07');
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("npytest", "npy", path));
  std::string error;
  ASSERT_TRUE(writeNpy(path.str().str(), array, error)) << error;
  NpyArray back;
  ASSERT_TRUE(readNpy(path.str().str(), back, error)) << error;
  EXPECT_EQ(back.shape, array.shape);
  EXPECT_EQ(back.data, array.data);
  llvm::sys::fs::remove(path);
}

TEST(Errors, FirstErrorWinsAndIsTaken) {
  ga_error error;
  EXPECT_EQ(ga_take_error(&error), GA_OK);
  EXPECT_EQ(error.count, 0);
  ga_report_error(GA_ERROR_LABEL_OUT_OF_RANGE, 4, 53, 64, 64, -100);
  ga_report_error(GA_ERROR_LABEL_OUT_OF_RANGE, 4, 60, -7, 64, -100);
  EXPECT_EQ(ga_take_error(&error), GA_ERROR_LABEL_OUT_OF_RANGE);
  EXPECT_EQ(error.position, 53);
  EXPECT_EQ(error.value, 64);
  EXPECT_EQ(error.count, 2);
  EXPECT_EQ(describeError(error, "[3, 5]"),
            "label 64 at position [3, 5] (flat 53) of argument #4 is outside "
            "[0, 64) and is not ignore_index (-100) (and 1 more invalid "
            "value(s))");
  EXPECT_EQ(ga_take_error(&error), GA_OK);
}

} // namespace
