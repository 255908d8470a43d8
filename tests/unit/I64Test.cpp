//===- tests/unit/I64Test.cpp - the i64 dtype ------------------------------===//
// Its spelling, type rules, exact CPU reference (past 2^31, 2^53 and near
// 2^62, wrapping as the GPU does), .npy `<i8` and exact comparison.
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Npy.h"
#include "ir/Parser.h"
#include "ir/Printer.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

using namespace minijit;

namespace {

Graph parse(const std::string &text) { return parseGraphs(text, "<i64>").at(0); }

HostTensor i64s(std::vector<int64_t> v) {
  return HostTensor::fromData(Shape{static_cast<int64_t>(v.size())}, std::span<const int64_t>(v));
}

std::vector<int64_t> valuesOf(const HostTensor &t) {
  std::vector<int64_t> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.getI64(i));
  return v;
}

/// The one output of `text` on `inputs`.
HostTensor run(const std::string &text, std::vector<HostTensor> inputs, size_t out = 0) {
  return evaluate(parse(text), inputs).at(out);
}

constexpr int64_t k53 = int64_t(1) << 53, k62 = int64_t(1) << 62;
constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

std::string errorOf(const std::string &text) {
  try {
    parse(text);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

TEST(I64, NameSizeAndStorage) {
  EXPECT_EQ(dtypeName(DType::I64), "i64");
  EXPECT_EQ(parseDType("i64"), DType::I64);
  EXPECT_EQ(dtypeSize(DType::I64), 8u);
  EXPECT_EQ(storageCType(DType::I64), "long long");
  EXPECT_FALSE(isFloat(DType::I64));
  EXPECT_TRUE(isInteger(DType::I64));
  EXPECT_EQ(toInt64(1e30), kMax);
  EXPECT_EQ(toInt64(-1e30), kMin);
  EXPECT_EQ(toInt64(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(toInt64(-2.9), -2);
}

TEST(I64, PrintsAndParsesBack) {
  std::string text = "graph g(%x: i64[3], %i: i32[3]) {\n"
                     "  %y = add %x, 9007199254740992\n"
                     "  %c = cast %i to=i64\n"
                     "  %z = mul %y, %c\n"
                     "  %s = sum %z axes=[0]\n"
                     "  %k = iota shape=[3] axis=0 dtype=i64\n"
                     "  %f = full shape=[3] value=-5 dtype=i64\n"
                     "  return %s, %k, %f\n"
                     "}\n";
  Graph g = parse(text);
  std::string printed = printGraph(g);
  EXPECT_NE(printed.find("i64[3]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("9007199254740992"), std::string::npos) << printed;
  EXPECT_EQ(printGraph(parse(printed)), printed);
}

TEST(I64, TypeErrors) {
  std::string mixed = errorOf("graph g(%x: i64[3], %i: i32[3]) {\n  %y = add %x, %i\n  return %y\n}\n");
  EXPECT_NE(mixed.find("different dtypes i64"), std::string::npos) << mixed;
  EXPECT_NE(mixed.find("cast"), std::string::npos) << mixed;
  std::string past53 = errorOf("graph g(%x: i64[3]) {\n  %y = add %x, 9007199254740994\n  return %y\n}\n");
  EXPECT_NE(past53.find("not an i64 value"), std::string::npos) << past53;
  std::string frac = errorOf("graph g(%x: i64[3]) {\n  %y = add %x, 1.5\n  return %y\n}\n");
  EXPECT_NE(frac.find("not an i64 value"), std::string::npos) << frac;
  std::string full = errorOf("graph g() {\n  %f = full shape=[3] value=1e19 dtype=i64\n  return %f\n}\n");
  EXPECT_NE(full.find("not an i64 value"), std::string::npos) << full;
  std::string idx = errorOf("graph g(%t: f32[4, 2], %i: f32[3]) {\n  %y = take %t, %i axis=0\n  return %y\n}\n");
  EXPECT_NE(idx.find("must be i32 or i64"), std::string::npos) << idx;
  std::string mm = errorOf("graph g(%a: i64[4, 4]) {\n  %y = matmul %a, %a\n  return %y\n}\n");
  EXPECT_NE(mm.find("floating-point"), std::string::npos) << mm;
  std::string exp = errorOf("graph g(%a: i64[4]) {\n  %y = exp %a\n  return %y\n}\n");
  EXPECT_NE(exp.find("cast it first"), std::string::npos) << exp;
}

TEST(I64, ArithmeticIsExactPast2To53AndWraps) {
  HostTensor x = i64s({k53 + 1, k62 + 3, -(k53 + 3), (int64_t(1) << 31) + 5, kMax, kMin});
  HostTensor y = i64s({2, 4, -1, 3, 1, -1});
  std::string g = "graph g(%x: i64[6], %y: i64[6]) {\n"
                  "  %a = add %x, %y\n  %s = sub %x, %y\n  %m = mul %x, %y\n"
                  "  %d = div %x, %y\n  %n = neg %x\n  %b = abs %x\n"
                  "  %hi = maximum %x, %y\n  %l = lt %x, %y\n"
                  "  return %a, %s, %m, %d, %n, %b, %hi, %l\n}\n";
  std::vector<HostTensor> outs = evaluate(parse(g), {x, y});
  using V = std::vector<int64_t>;
  EXPECT_EQ(valuesOf(outs[0]), (V{k53 + 3, k62 + 7, -(k53 + 4), (int64_t(1) << 31) + 8, kMin, kMax}));
  EXPECT_EQ(valuesOf(outs[1]), (V{k53 - 1, k62 - 1, -(k53 + 2), (int64_t(1) << 31) + 2, kMax - 1, kMin + 1}));
  EXPECT_EQ(valuesOf(outs[2]), (V{2 * k53 + 2, 12, k53 + 3, 3 * ((int64_t(1) << 31) + 5), kMax, kMin}));
  EXPECT_EQ(valuesOf(outs[3]), (V{(k53 + 1) / 2, (k62 + 3) / 4, k53 + 3, ((int64_t(1) << 31) + 5) / 3, kMax, kMin}));
  EXPECT_EQ(valuesOf(outs[4]), (V{-(k53 + 1), -(k62 + 3), k53 + 3, -((int64_t(1) << 31) + 5), -kMax, kMin}));
  EXPECT_EQ(valuesOf(outs[5]), (V{k53 + 1, k62 + 3, k53 + 3, (int64_t(1) << 31) + 5, kMax, kMin}));
  EXPECT_EQ(valuesOf(outs[6]), (V{k53 + 1, k62 + 3, -1, (int64_t(1) << 31) + 5, kMax, -1}));
  EXPECT_EQ(valuesOf(outs[7]), (V{0, 0, 1, 0, 0, 1}));
  // x / 0 is 0, as for i32
  EXPECT_EQ(valuesOf(run("graph g(%x: i64[1]) {\n  %d = div %x, 0\n  return %d\n}\n", {i64s({k62})})),
            V{0});
}

TEST(I64, ReductionsAndCumsumAreExact) {
  HostTensor x = i64s({k62, k53 + 1, 1, -(k53), 7});
  std::string g = "graph g(%x: i64[5]) {\n"
                  "  %s = sum %x axes=[0]\n  %mx = max %x axes=[0]\n  %mn = min %x axes=[0]\n"
                  "  %p = prod %x axes=[0]\n  %c = cumsum %x axis=0\n  %am = argmin %x axis=0\n"
                  "  return %s, %mx, %mn, %p, %c, %am\n}\n";
  std::vector<HostTensor> outs = evaluate(parse(g), {x});
  using V = std::vector<int64_t>;
  EXPECT_EQ(valuesOf(outs[0]), V{k62 + 9});
  EXPECT_EQ(valuesOf(outs[1]), V{k62});
  EXPECT_EQ(valuesOf(outs[2]), V{-k53});
  uint64_t p = uint64_t(k62) * uint64_t(k53 + 1) * uint64_t(-k53) * 7u; // wraps
  EXPECT_EQ(valuesOf(outs[3]), V{static_cast<int64_t>(p)});
  EXPECT_EQ(valuesOf(outs[4]), (V{k62, k62 + k53 + 1, k62 + k53 + 2, k62 + 2, k62 + 9}));
  EXPECT_EQ(outs[5].dtype(), DType::I32);
  EXPECT_EQ(outs[5].get(0), 3);
  // a long sum, split over chunks by the evaluator, still exact
  std::vector<int64_t> many(100003, k53 + 1);
  HostTensor m = HostTensor::fromData(Shape{100003}, std::span<const int64_t>(many));
  HostTensor s = run("graph g(%x: i64[100003]) {\n  %s = sum %x axes=[0]\n  return %s\n}\n", {m});
  EXPECT_EQ(s.getI64(0), static_cast<int64_t>(uint64_t(k53 + 1) * 100003u));
}

TEST(I64, CastsToAndFromEveryDType) {
  HostTensor x = i64s({(int64_t(1) << 32) + 5, k53 + 1, -3, 0});
  std::string g = "graph g(%x: i64[4]) {\n"
                  "  %i = cast %x to=i32\n  %f = cast %x to=f32\n  %h = cast %x to=f16\n"
                  "  %b = cast %x to=bool\n  %back = cast %i to=i64\n  return %i, %f, %h, %b, %back\n}\n";
  std::vector<HostTensor> outs = evaluate(parse(g), {x});
  EXPECT_EQ(outs[0].get(0), 5);            // the low 32 bits
  EXPECT_EQ(outs[0].get(1), 1);
  EXPECT_EQ(outs[1].get(0), 4294967296.0); // rounded once to f32
  EXPECT_EQ(outs[1].get(1), 9007199254740992.0);
  EXPECT_EQ(outs[2].get(0), INFINITY);     // past f16's range
  EXPECT_EQ(outs[2].get(2), -3);
  EXPECT_EQ(outs[3].get(2), 1);
  EXPECT_EQ(outs[3].get(3), 0);
  EXPECT_EQ(valuesOf(outs[4]), (std::vector<int64_t>{5, 1, -3, 0}));
  HostTensor f = HostTensor::fromData(Shape{4}, std::span<const float>(std::vector<float>{1e20f, -1e20f, -2.75f, NAN}));
  HostTensor fromF = run("graph g(%f: f32[4]) {\n  %y = cast %f to=i64\n  return %y\n}\n", {f});
  EXPECT_EQ(valuesOf(fromF), (std::vector<int64_t>{kMax, kMin, -2, 0})); // saturates; NaN is 0
}

TEST(I64, TakeAndViewsCopyExactly) {
  HostTensor t = i64s({k62 + 1, k53 + 1, -k62 - 1});
  HostTensor ids = i64s({2, 0, 1, 5, -4});
  std::string g = "graph g(%t: i64[3], %ids: i64[5]) {\n"
                  "  %e = take %t, %ids axis=0\n  %r = reshape %e shape=[5, 1]\n"
                  "  %p = pad %r before=[0, 1] after=[0, 0] value=0\n"
                  "  %fl = flip %t axes=[0]\n  %cc = concat %t, %fl axis=0\n  return %p, %cc\n}\n";
  std::vector<HostTensor> outs = evaluate(parse(g), {t, ids});
  using V = std::vector<int64_t>;
  EXPECT_EQ(valuesOf(outs[0]), (V{0, -k62 - 1, 0, k62 + 1, 0, k53 + 1, 0, -k62 - 1, 0, k62 + 1}));
  EXPECT_EQ(valuesOf(outs[1]), (V{k62 + 1, k53 + 1, -k62 - 1, -k62 - 1, k53 + 1, k62 + 1}));
}

TEST(I64, NpyRoundTripsExactly) {
  HostTensor x = i64s({k62 + 1, -(k53 + 1), kMin, kMax, 0});
  std::string bytes = npyBytes(x);
  EXPECT_NE(bytes.find("'descr': '<i8'"), std::string::npos);
  llvm::SmallString<128> path;
  ASSERT_FALSE(llvm::sys::fs::createTemporaryFile("minijit-i64", "npy", path));
  writeNpy(path.str().str(), x);
  HostTensor y = readNpy(path.str().str(), "x", std::pair(DType::I64, Shape{5}));
  HostTensor any = HostTensor::fromNpy(path.str().str());
  llvm::sys::fs::remove(path);
  EXPECT_EQ(valuesOf(y), valuesOf(x));
  EXPECT_EQ(any.dtype(), DType::I64);
  EXPECT_EQ(valuesOf(any), valuesOf(x));
}

TEST(I64, RandomPoisonAndExactCompare) {
  HostTensor r = HostTensor::random(DType::I64, {1000}, 3);
  for (int64_t i = 0; i < r.numel(); ++i) {
    EXPECT_GE(r.getI64(i), -16);
    EXPECT_LE(r.getI64(i), 16);
  }
  HostTensor a = i64s({k62 + 1, 5}), b = i64s({k62, 5}); // equal as doubles
  EXPECT_EQ(a.get(0), b.get(0));
  EXPECT_EQ(toleranceFor(parse("graph g(%x: i64[2]) {\n  return %x\n}\n"), 0).rtol, 0);
  CompareResult c = compareTensors(a, b, Tolerance{0});
  EXPECT_FALSE(c.ok);
  EXPECT_NE(c.summary.find("got 4611686018427387905, expected 4611686018427387904"), std::string::npos)
      << c.summary;
  EXPECT_TRUE(compareTensors(a, a, Tolerance{0}).ok);
  HostTensor p(DType::I64, {2});
  p.poison();
  EXPECT_TRUE(p.isPoisoned(1));
  EXPECT_EQ(compareTensors(p, a, Tolerance{0}).unwritten, 2);
}

} // namespace

namespace {

TEST(I64, LiteralFoldsStayWithinADoublesIntegers) {
  // 3000000019^2 passes 2^53: the fold is left to the kernel (no literal
  // past 2^53); 5 * 7 folds; an i64 -> i32 cast of a literal keeps the low
  // 32 bits, as the evaluator does for tensors.
  std::string text = "graph g(%x: i64[2]) {\n"
                     "  %a = full shape=[2] value=3000000019 dtype=i64\n"
                     "  %b = mul %a, 3000000019\n"
                     "  %c = add %x, %b\n"
                     "  %i = cast %a to=i32\n"
                     "  return %c, %i\n}\n";
  std::vector<HostTensor> outs = evaluate(parse(text), {i64s({1, -1})});
  uint64_t sq = uint64_t(3000000019) * uint64_t(3000000019);
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<int64_t>{static_cast<int64_t>(sq + 1),
                                                      static_cast<int64_t>(sq - 1)}));
  EXPECT_EQ(outs[1].get(0), static_cast<int32_t>(static_cast<uint32_t>(3000000019u)));
}

} // namespace
