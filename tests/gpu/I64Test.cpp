//===- tests/gpu/I64Test.cpp - i64 values on the GPU -----------------------===//
// i64 arithmetic, comparisons, reductions, cumsum, casts, take with i64
// indices and argmax over i64 values, against the CPU reference (exact, as
// every integer output), at odd sizes, with values past 2^31 (the graphs
// scale the small random inputs by literals past 2^31, and products wrap
// past 2^63).
//===----------------------------------------------------------------------===//
#include "tests/gpu/GpuTest.h"

#include "ir/Parser.h"

namespace minijit {
namespace {

const int64_t kSizes[] = {1, 3, 1023, 1025, (1 << 20) + 7};

class I64 : public GpuTest {
protected:
  Graph parse(const std::string &text) { return parseGraphs(text, "<i64 test>").at(0); }
};

std::string n(int64_t v) { return std::to_string(v); }

TEST_F(I64, ArithmeticAndComparisonsPast2To31) {
  for (int64_t size : kSizes) {
    std::string t = "i64[" + n(size) + "]";
    Graph g = parse("graph arith(%x: " + t + ", %y: " + t + ") {\n"
                    "  %big = mul %x, 3000000019\n"          // past 2^31
                    "  %wide = mul %big, %big\n"              // past 2^63: wraps
                    "  %s = add %wide, %y\n"
                    "  %d = sub %big, %y\n"
                    "  %q = div %big, %y\n"                  // toward zero; x/0 = 0
                    "  %n = neg %d\n"
                    "  %a = abs %d\n"
                    "  %hi = maximum %big, %y\n"
                    "  %lo = minimum %big, %y\n"
                    "  %lt = lt %big, %y\n"
                    "  %w = where %lt, %big, %n\n"
                    "  return %s, %q, %a, %hi, %lo, %w\n"
                    "}\n");
    expectMatches(g, static_cast<uint64_t>(size));
  }
}

TEST_F(I64, ReductionsOfRowsColumnsAndAll) {
  const std::pair<int64_t, int64_t> shapes[] = {{1, 1}, {3, 1025}, {1025, 3}, {1023, 1025}, {7, (1 << 20) + 7}};
  for (auto [r, c] : shapes) {
    std::string t = "i64[" + n(r) + ", " + n(c) + "]";
    Graph g = parse("graph red(%x: " + t + ") {\n"
                    "  %big = mul %x, 3000000019\n"
                    "  %rs = sum %big axes=[1]\n"
                    "  %cs = sum %big axes=[0]\n"
                    "  %rmax = max %big axes=[1]\n"
                    "  %cmin = min %big axes=[0]\n"
                    "  %all = sum %big axes=[0, 1]\n"
                    "  return %rs, %cs, %rmax, %cmin, %all\n"
                    "}\n");
    expectMatches(g, static_cast<uint64_t>(r + c));
    Graph p = parse("graph prod(%x: " + t + ") {\n"
                    "  %p = prod %x axes=[1]\n" // wraps past 2^63 on long rows
                    "  %am = argmax %x axis=1\n"
                    "  return %p, %am\n"
                    "}\n");
    expectMatches(p, static_cast<uint64_t>(r * 3 + c));
  }
}

TEST_F(I64, CumsumPast2To31) {
  for (int64_t size : kSizes) {
    Graph g = parse("graph scan(%x: i64[3, " + n(size) + "]) {\n"
                    "  %big = mul %x, 3000000019\n"
                    "  %c = cumsum %big axis=1\n"
                    "  %d = cumsum %big axis=0\n"
                    "  return %c, %d\n"
                    "}\n");
    expectMatches(g, static_cast<uint64_t>(size));
  }
}

TEST_F(I64, CastsToAndFromEveryDType) {
  for (const char *other : {"f32", "f16", "bf16", "i32", "bool"}) {
    std::string o = other;
    Graph g = parse("graph casts(%x: i64[1025], %f: " + o + "[1025]) {\n"
                    "  %big = mul %x, 3000000019\n"
                    "  %to = cast %big to=" + o + "\n" +
                    (o == "f32" || o == "f16" || o == "bf16"
                         ? "  %s = mul %f, 40\n  %from = cast %s to=i64\n"
                         : "  %from = cast %f to=i64\n") +
                    "  %sum = add %from, %big\n"
                    "  return %to, %sum\n"
                    "}\n");
    expectMatches(g, 5);
  }
}

TEST_F(I64, TakeWithI64Indices) {
  for (int64_t size : kSizes) {
    Graph g = parse("graph gather(%table: f32[37, 5], %ids: i64[" + n(size) + "], "
                    "%t: i64[37, 3], %ix: i64[37, 3]) {\n"
                    "  %e = take %table, %ids axis=0\n"
                    "  %a = take_along_axis %t, %ix axis=1\n"
                    "  return %e, %a\n"
                    "}\n");
    expectMatches(g, static_cast<uint64_t>(size));
  }
}

TEST_F(I64, IotaAndFull) {
  Graph g = parse("graph made(%x: i64[1025]) {\n"
                  "  %i = iota shape=[1025] axis=0 dtype=i64\n"
                  "  %f = full shape=[1025] value=9007199254740992 dtype=i64\n"
                  "  %s = add %i, %f\n"
                  "  %y = add %s, %x\n"
                  "  return %y\n"
                  "}\n");
  expectMatches(g, 9);
}

} // namespace
} // namespace minijit
