// numpy's .npy format (ir/Npy.h): the bytes numpy writes, round trips of every
// dtype, bf16 through f32, f64 read with rounding, and every refusal.
#include "ir/Npy.h"
#include "ir/Error.h"

#include "tests/support/Expect.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/raw_ostream.h"

#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

using namespace minijit;

namespace {

/// numpy 2.x's bytes for np.save of a small array: the magic, version 1.0,
/// the header length 118 and the header padded to 128 bytes in all.
std::string numpyBytes(const std::string &dict, const std::string &data) {
  std::string header = dict;
  header.append(117 - dict.size(), ' ');
  header += '\n';
  return std::string("\x93NUMPY\x01\x00", 8) + std::string("\x76\x00", 2) + header + data;
}

/// The scratch files' directories, removed when the test program ends.
struct ScratchDirs {
  std::vector<std::string> dirs;
  ~ScratchDirs() {
    for (const std::string &d : dirs)
      llvm::sys::fs::remove_directories(d);
  }
};

/// `bytes` as the file `name` in a new directory of its own.
std::string scratchFile(const std::string &name, const std::string &bytes) {
  static ScratchDirs scratch;
  llvm::SmallString<128> dir;
  llvm::sys::fs::createUniqueDirectory("minijit-npy", dir);
  scratch.dirs.push_back(dir.str().str());
  std::string path = (dir + "/" + name).str();
  std::error_code ec;
  llvm::raw_fd_ostream os(path, ec);
  os << bytes;
  return path;
}

TEST(Npy, WritesTheBytesNumpyWrites) {
  HostTensor f(DType::F32, {2, 3});
  for (int i = 0; i < 6; ++i)
    f.set(i, i);
  std::string data(static_cast<const char *>(f.data()), 24);
  EXPECT_EQ(npyBytes(f),
            numpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }", data));
  HostTensor b(DType::Bool, {3});
  b.set(0, 1);
  b.set(2, 1);
  EXPECT_EQ(npyBytes(b), numpyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (3,), }",
                                    std::string("\x01\x00\x01", 3)));
  HostTensor h(DType::F16, {});
  h.set(0, 1.5);
  EXPECT_EQ(npyBytes(h), numpyBytes("{'descr': '<f2', 'fortran_order': False, 'shape': (), }",
                                    std::string("\x00\x3e", 2)));
}

TEST(Npy, EveryDTypeRoundTrips) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool}) {
    HostTensor x = HostTensor::random(t, {3, 5, 7}, 9);
    std::string path = scratchFile("x.npy", "");
    writeNpy(path, x);
    HostTensor y = readNpy(path, "x", std::pair(t, Shape{3, 5, 7}));
    ASSERT_EQ(y.dtype(), t);
    for (int64_t i = 0; i < x.numel(); ++i)
      EXPECT_EQ(y.get(i), x.get(i)) << std::string(dtypeName(t)) << " element " << i;
  }
}

TEST(Npy, Bf16IsWrittenAsF32AndReadWithRounding) {
  HostTensor x(DType::F32, {2});
  x.set(0, 1.00390625); // halfway between two bf16 values: rounds to even (1.0)
  x.set(1, 3.0);
  std::string path = scratchFile("b.npy", npyBytes(x));
  HostTensor y = readNpy(path, "input %b", std::pair(DType::BF16, Shape{2}));
  EXPECT_EQ(y.get(0), 1.0);
  EXPECT_EQ(y.get(1), 3.0);
  EXPECT_NE(npyBytes(y).find("'<f4'"), std::string::npos);
}

TEST(Npy, F64IsReadWithRounding) {
  double v[2] = {0.1, -2.5};
  std::string path = scratchFile(
      "d.npy", numpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }",
                          std::string(reinterpret_cast<const char *>(v), 16)));
  HostTensor y = readNpy(path, "input %d", std::pair(DType::F32, Shape{2}));
  EXPECT_EQ(y.get(0), static_cast<double>(0.1f));
  EXPECT_EQ(readNpy(path, "d").dtype(), DType::F32);
}

TEST(Npy, RefusalsNameTheInputAndTheFile) {
  std::string f4 = numpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }",
                              std::string(24, '\0'));
  std::string path = scratchFile("x.npy", f4);
  auto msg = [](auto fn) { return graphErrorOf(fn); };
  EXPECT_EQ(msg([&] { readNpy(path, "input %x", std::pair(DType::F32, Shape{3, 2})); }),
            "input %x (" + path + "): the file holds shape [2, 3] but [3, 2] is needed");
  EXPECT_EQ(msg([&] { readNpy(path, "input %x", std::pair(DType::I32, Shape{2, 3})); }),
            "input %x (" + path + "): the file holds <f4 (f32) but i32 is needed");
  std::string cut = scratchFile("cut.npy", f4.substr(0, 140));
  EXPECT_EQ(msg([&] { readNpy(cut, "input %x"); }),
            "input %x (" + cut +
                "): the file is truncated: 6 elements of 4 bytes need 24 bytes of data, it has 12");
  std::string head = scratchFile("head.npy", f4.substr(0, 40));
  EXPECT_EQ(msg([&] { readNpy(head, "input %x"); }),
            "input %x (" + head + "): the file is truncated in its header");
  std::string big = scratchFile(
      "big.npy", numpyBytes("{'descr': '>f4', 'fortran_order': False, 'shape': (2, 3), }",
                            std::string(24, '\0')));
  EXPECT_NE(msg([&] { readNpy(big, "input %x"); }).find("unsupported element type '>f4'"),
            std::string::npos);
  std::string fortran = scratchFile(
      "f.npy", numpyBytes("{'descr': '<f4', 'fortran_order': True, 'shape': (2, 3), }",
                          std::string(24, '\0')));
  EXPECT_NE(msg([&] { readNpy(fortran, "input %x"); }).find("Fortran order"), std::string::npos);
  std::string text = scratchFile("t.npy", "hello, this is not numpy");
  EXPECT_EQ(msg([&] { readNpy(text, "input %x"); }),
            "input %x (" + text + "): not a .npy file (no \\x93NUMPY magic)");
  EXPECT_NE(msg([&] { readNpy("/nonexistent/x.npy", "input %x"); }).find("cannot read the file"),
            std::string::npos);
}

TEST(Npy, MalformedHeadersAreRefusedWithWhereTheyBroke) {
  auto refusal = [](const std::string &name, const std::string &dict) {
    std::string path = scratchFile(name, numpyBytes(dict, std::string(24, '\0')));
    std::string m = graphErrorOf([&] { readNpy(path, "input %x"); });
    std::string prefix = "input %x (" + path + "): ";
    EXPECT_EQ(m.rfind(prefix, 0), 0u) << m;
    return m.substr(std::min(m.size(), prefix.size()));
  };
  EXPECT_EQ(refusal("order.npy", "{'descr': '<f4', 'fortran_order': Maybe, 'shape': (2, 3), }"),
            "fortran_order is neither True nor False");
  EXPECT_EQ(refusal("key.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (6,), 'x': 1}"),
            "unknown key 'x' in the header");
  EXPECT_EQ(refusal("lacks.npy", "{'descr': '<f4', 'shape': (2, 3), }"),
            "the header lacks 'descr', 'fortran_order' or 'shape'");
  EXPECT_EQ(refusal("brace.npy", "['descr': '<f4']"),
            "malformed header: expected '{' at byte 0");
  EXPECT_EQ(refusal("quote.npy", "{descr: '<f4'}"),
            "malformed header: expected a quoted string at byte 1");
  EXPECT_EQ(refusal("open.npy", "{'descr: <f4"), "malformed header: an unterminated string");
  EXPECT_EQ(refusal("dim.npy", "{'descr': '<f4', 'fortran_order': False, 'shape': (2, x), }"),
            "malformed header: expected a dimension at byte 54");
  EXPECT_EQ(refusal("huge.npy",
                    "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }"),
            "a dimension is too large");
  std::string v9 = numpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (6,), }",
                              std::string(24, '\0'));
  v9[6] = 9;
  std::string path = scratchFile("v9.npy", v9);
  EXPECT_EQ(graphErrorOf([&] { readNpy(path, "input %x"); }),
            "input %x (" + path + "): unsupported .npy format version 9.0");
}

TEST(Npy, Version2HeadersAreRead) {
  std::string dict = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
  std::string header = dict;
  header.append(128 - 12 - dict.size() - 1, ' ');
  header += '\n';
  int32_t v[2] = {7, -3};
  std::string bytes = std::string("\x93NUMPY\x02\x00", 8) + std::string("\x74\x00\x00\x00", 4) +
                      header + std::string(reinterpret_cast<const char *>(v), 8);
  HostTensor y = readNpy(scratchFile("v2.npy", bytes), "x");
  EXPECT_EQ(y.get(0), 7);
  EXPECT_EQ(y.get(1), -3);
}

} // namespace
