// slice, pad, concat and iota (issue 16): the builder's checks and messages,
// the text round trip, the CPU reference against hand-computed values, the
// simplifier's rules, and fusion (views and selects, never a copy kernel).
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/lower/FuseAndLower.h"
#include "compiler/simplify/Simplify.h"
#include "ir/Builder.h"
#include "ir/Evaluator.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace minijit;

namespace {

/// 0, 1, 2, ... in the shape, as `dtype`.
HostTensor counting(DType dtype, const Shape &s) {
  HostTensor t(dtype, s);
  for (int64_t i = 0; i < t.numel(); ++i)
    t.set(i, static_cast<double>(i));
  return t;
}

std::vector<double> valuesOf(const HostTensor &t) {
  std::vector<double> v;
  for (int64_t i = 0; i < t.numel(); ++i)
    v.push_back(t.get(i));
  return v;
}

/// The graph's first output evaluated on counting inputs.
std::vector<double> evalCounting(const Graph &g) {
  std::vector<HostTensor> ins;
  for (ValueId i : g.inputs())
    ins.push_back(counting(g.node(i).dtype, g.node(i).shape));
  return valuesOf(evaluate(g, ins)[0]);
}

std::string parseErrorOf(const std::string &text) {
  try {
    parseGraphs(text, "t.mj");
  } catch (const ParseError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no ParseError for:\n" << text;
  return "";
}

} // namespace

// ---- the builder

TEST(DataMovement, SliceShapeAndResolvedBounds) {
  Graph g("s");
  Tensor x = g.input("x", DType::F32, {4, 10});
  Tensor a = slice(x, 1, -8, 10, 2);
  EXPECT_EQ(a.shape(), Shape({4, 4}));
  EXPECT_EQ(a.node().start, 2);
  EXPECT_EQ(a.node().end, 10);
  EXPECT_EQ(slice(x, -2, 1, -1).shape(), Shape({2, 10}));
  EXPECT_EQ(slice(x, 1, 0, 10, 3).shape(), Shape({4, 4})); // 0 3 6 9
}

TEST(DataMovement, SliceErrorsGiveTheNumbers) {
  Graph g("s");
  Tensor x = g.input("x", DType::F32, {4, 10});
  EXPECT_EQ(graphErrorOf([&] { slice(x, 2, 0, 1); }),
            "slice: axis 2 is out of range for rank 2 (valid: -2..1)");
  EXPECT_EQ(graphErrorOf([&] { slice(x, 1, 11, 11); }),
            "slice: start=11 is out of range for axis 1 of size 10 (valid: -10..10)");
  EXPECT_EQ(graphErrorOf([&] { slice(x, 1, 0, 11); }),
            "slice: end=11 is out of range for axis 1 of size 10 (valid: -10..10)");
  EXPECT_EQ(slice(x, 1, 5, 5).shape(), (Shape{4, 0})) << "an empty slice (issue 42)";
  EXPECT_EQ(slice(x, 1, 10, 10).shape(), (Shape{4, 0}));
  EXPECT_EQ(graphErrorOf([&] { slice(x, 1, -2, -3); }),
            "slice: start=-2 end=-3 has its end before its start on axis 1 (size 10); end == "
            "start selects no element (an empty slice)");
  EXPECT_EQ(graphErrorOf([&] { slice(x, 1, 0, 4, 0); }), "slice: step=0 must be at least 1");
  Tensor s = g.input("s", DType::F32, Shape{});
  EXPECT_EQ(graphErrorOf([&] { slice(s, 0, 0, 1); }),
            "slice: the operand is a scalar (rank 0), which has no axis 0");
}

TEST(DataMovement, PadErrorsGiveTheNumbers) {
  Graph g("p");
  Tensor x = g.input("x", DType::F32, {4, 6});
  EXPECT_EQ(pad(x, {1, 0}, {0, 2}).shape(), Shape({5, 8}));
  EXPECT_EQ(graphErrorOf([&] { pad(x, {1}, {0, 2}); }),
            "pad: before=[1] and after=[0, 2] need one entry per axis of [4, 6] (rank 2)");
  EXPECT_EQ(graphErrorOf([&] { pad(x, {0, -1}, {0, 0}); }),
            "pad: before=[0, -1] after=[0, 0] has a negative count at axis 1; pads add elements "
            "(drop them with slice)");
  Tensor i = g.input("i", DType::I32, {3});
  EXPECT_EQ(graphErrorOf([&] { pad(i, {1}, {1}, 0.5); }), "pad: value=0.5 is not an i32 value");
  Tensor b = g.input("b", DType::Bool, {3});
  EXPECT_EQ(graphErrorOf([&] { pad(b, {1}, {1}, 2); }),
            "pad: value=2 is not a bool value (use 0 or 1)");
  EXPECT_EQ(graphErrorOf([&] { pad(x, {0, 0}, {0, 0}, 1e39); }), "pad: value=1e+39 overflows f32");
}

TEST(DataMovement, ConcatErrorsGiveTheNumbers) {
  Graph g("c");
  Tensor a = g.input("a", DType::F32, {4, 3});
  Tensor b = g.input("b", DType::F32, {4, 5});
  Tensor c = g.input("c", DType::F32, {3, 5});
  Tensor h = g.input("h", DType::F16, {4, 5});
  Tensor v = g.input("v", DType::F32, {4});
  EXPECT_EQ(concat({a, b}, 1).shape(), Shape({4, 8}));
  EXPECT_EQ(concat({a, b, a}, -1).shape(), Shape({4, 11}));
  EXPECT_EQ(graphErrorOf([&] { concat({a, b}, 0); }),
            "concat: shapes [4, 3] and [4, 5] differ in dim 1 (3 vs 5); only the concatenated "
            "axis 0 may differ");
  EXPECT_EQ(graphErrorOf([&] { concat({b, c}, 1); }),
            "concat: shapes [4, 5] and [3, 5] differ in dim 0 (4 vs 3); only the concatenated "
            "axis 1 may differ");
  EXPECT_EQ(graphErrorOf([&] { concat({b, v}, 0); }),
            "concat: operand 1 (%v) has rank 1 but operand 0 (%b) has rank 2; all operands need "
            "one rank");
  EXPECT_NE(graphErrorOf([&] { concat({b, h}, 0); }).find("concat: operands have different dtypes"),
            std::string::npos);
  EXPECT_EQ(graphErrorOf([&] { concat({a, b}, 2); }),
            "concat: axis 2 is out of range for rank 2 (valid: -2..1)");
  EXPECT_EQ(graphErrorOf([&] { concat(std::vector<Tensor>{}, 0); }),
            "concat: expects at least one tensor, got none");
}

TEST(DataMovement, IotaErrors) {
  Graph g("i");
  EXPECT_EQ(iota(g, {4, 8}, 1).dtype(), DType::I32);
  EXPECT_EQ(iota(g, {4, 8}, -2, DType::BF16).node().axis, 0);
  EXPECT_EQ(graphErrorOf([&] { iota(g, {4, 8}, 2); }),
            "iota: axis 2 is out of range for rank 2 (valid: -2..1)");
  EXPECT_EQ(graphErrorOf([&] { iota(g, {4}, 0, DType::Bool); }),
            "iota: dtype bool cannot hold an index; use i32, f32, f16 or bf16");
}

// ---- the text form

TEST(DataMovement, TextRoundTrips) {
  const char *text = R"(graph g(%x: f32[4, 10], %y: i32[4, 6]) {
  %a = slice %x axis=1 start=2 end=10 step=2 : f32[4, 4]
  %b = slice %x axis=0 start=1 end=3 : f32[2, 10]
  %p = pad %y before=[1, 0] after=[0, 3] value=-7 : i32[5, 9]
  %c = concat %a, %a, %a axis=1 : f32[4, 12]
  %i = iota shape=[4, 12] axis=1 dtype=f16 : f16[4, 12]
  %j = iota shape=[3] axis=0 dtype=i32 : i32[3]
  %n = pad %x before=[0, 0] after=[1, 0] value=-inf : f32[5, 10]
  return %b, %p, %c, %i, %j, %n
}
)";
  std::vector<Graph> gs = parseGraphs(text, "t.mj");
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(printGraph(gs[0]), text);
}

TEST(DataMovement, TextResolvesNegativeBoundsAndDefaults) {
  std::vector<Graph> gs = parseGraphs(R"(graph g(%x: f32[4, 10]) {
  %a = slice %x axis=-1 start=-3 end=-1
  %p = pad %x before=[0, 1] after=[0, 0]
  %i = iota shape=[2] axis=0
  return %a, %p, %i
})",
                                      "t.mj");
  std::string printed = printGraph(gs[0]);
  EXPECT_NE(printed.find("slice %x axis=1 start=7 end=9 : f32[4, 2]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("value=0 : f32[4, 11]"), std::string::npos) << printed;
  EXPECT_NE(printed.find("dtype=i32 : i32[2]"), std::string::npos) << printed;
}

TEST(DataMovement, TextErrors) {
  const std::string head = "graph g(%x: f32[4, 10]) {\n";
  EXPECT_EQ(parseErrorOf(head + "  %a = slice %x axis=1 start=0\n  return %a\n}\n"),
            "t.mj:2:8: error: slice needs the attribute end=...");
  EXPECT_EQ(parseErrorOf(head + "  %a = slice %x axis=1 start=0 end=99\n  return %a\n}\n"),
            "t.mj:2:8: error: slice: end=99 is out of range for axis 1 of size 10 (valid: -10..10)");
  EXPECT_EQ(parseErrorOf(head + "  %a = pad %x before=[0, 0] after=[0, 0] value=%x\n  return %a\n}\n"),
            "t.mj:2:48: error: pad: value= is a number literal, not a value");
  EXPECT_EQ(parseErrorOf(head + "  %a = iota %x shape=[2] axis=0\n  return %a\n}\n"),
            "t.mj:2:13: error: iota: takes no operands, only shape=[...] axis=A dtype=D");
  EXPECT_EQ(parseErrorOf(head + "  %a = concat %x, %x\n  return %a\n}\n"),
            "t.mj:2:8: error: concat needs the attribute axis=...");
  EXPECT_EQ(parseErrorOf(head + "  %a = concat %x, 1 axis=0\n  return %a\n}\n"),
            "t.mj:2:19: error: concat: operand 1 must be a value (%name), not a literal");
  EXPECT_EQ(parseErrorOf(head + "  %a = slice %x axis=1 start=0 end=2 perm=[0]\n  return %a\n}\n"),
            "t.mj:2:38: error: unknown attribute 'perm' for slice (expected: axis, start, end, step)");
}

// ---- the CPU reference against values worked out by hand

TEST(DataMovement, ReferenceSlices) {
  Graph g("s");
  Tensor x = g.input("x", DType::F32, {2, 6}); // rows 0..5 and 6..11
  g.output(slice(x, 1, -4, -1), "a");           // columns 2, 3, 4
  EXPECT_EQ(evalCounting(g), (std::vector<double>{2, 3, 4, 8, 9, 10}));
  Graph h("t");
  Tensor y = h.input("y", DType::I32, {2, 6});
  h.output(slice(slice(y, 1, 1, 6, 2), 0, 1, 2), "b"); // row 1, columns 1, 3, 5
  EXPECT_EQ(evalCounting(h), (std::vector<double>{7, 9, 11}));
  Graph k("u");
  Tensor z = k.input("z", DType::F16, {6});
  k.output(slice(z, 0, 5, 6), "c"); // the last element alone
  EXPECT_EQ(evalCounting(k), (std::vector<double>{5}));
}

TEST(DataMovement, ReferencePads) {
  Graph g("p");
  Tensor x = g.input("x", DType::I32, {2, 2}); // 0 1 / 2 3
  g.output(pad(x, {1, 0}, {0, 2}, -1), "y");
  EXPECT_EQ(evalCounting(g), (std::vector<double>{-1, -1, -1, -1, 0, 1, -1, -1, 2, 3, -1, -1}));
  Graph e("empty");
  Tensor z = e.input("z", DType::F32, {3});
  e.output(pad(z, {0}, {0}, 9) + 0.0, "y");
  EXPECT_EQ(evalCounting(e), (std::vector<double>{0, 1, 2}));
  Graph b("bools");
  Tensor t = b.input("t", DType::Bool, {2});
  b.output(pad(t, {1}, {1}, 1), "y"); // counting bools: false, true
  EXPECT_EQ(evalCounting(b), (std::vector<double>{1, 0, 1, 1}));
}

TEST(DataMovement, ReferenceConcats) {
  Graph g("c");
  Tensor a = g.input("a", DType::F32, {2, 1}); // 0 / 1
  Tensor b = g.input("b", DType::F32, {2, 2}); // 0 1 / 2 3
  g.output(concat({a, b, a}, 1), "y");
  EXPECT_EQ(evalCounting(g), (std::vector<double>{0, 0, 1, 0, 1, 2, 3, 1}));
  Graph h("rows");
  Tensor p = h.input("p", DType::I32, {1, 2});
  Tensor q = h.input("q", DType::I32, {2, 2});
  h.output(concat({q, p}, 0), "y");
  EXPECT_EQ(evalCounting(h), (std::vector<double>{0, 1, 2, 3, 0, 1}));
}

TEST(DataMovement, ReferenceIota) {
  Graph g("i");
  g.output(iota(g, {2, 3}, 1), "cols");
  g.output(iota(g, {2, 3}, 0, DType::F32), "rows");
  Tensor big = iota(g, {4097}, 0, DType::F16);
  g.output(big, "big");
  std::vector<HostTensor> outs = evaluate(g, {});
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<double>{0, 1, 2, 0, 1, 2}));
  EXPECT_EQ(valuesOf(outs[1]), (std::vector<double>{0, 0, 0, 1, 1, 1}));
  EXPECT_EQ(outs[2].get(2049), 2048); // f16 holds even integers only above 2048
  EXPECT_EQ(outs[2].get(4096), 4096);
}

TEST(DataMovement, RotaryHalvesRoundTrip) {
  // concat(slice(x, second half), slice(x, first half)) twice is x again.
  Graph g("rot");
  Tensor x = g.input("x", DType::F32, {3, 8});
  Tensor r = concat({slice(x, 1, 4, 8), slice(x, 1, 0, 4)}, 1);
  g.output(concat({slice(r, 1, 4, 8), slice(r, 1, 0, 4)}, 1) - x, "zero");
  for (double v : evalCounting(g))
    EXPECT_EQ(v, 0);
}

// ---- simplify

TEST(DataMovement, SimplifyFoldsSlicesAndPads) {
  Graph g("s");
  Tensor x = g.input("x", DType::F32, {4, 20});
  Tensor a = g.input("a", DType::F32, {4, 3});
  Tensor whole = slice(x, 1, 0, 20);
  Tensor twice = slice(slice(x, 1, 2, 20, 3), 1, 1, 5, 2); // elements 5, 11 of x
  Tensor fromConcat = slice(concat({a, x}, 1), 1, 5, 9);   // x's 2..5
  Tensor padded = pad(pad(x, {1, 0}, {0, 2}, 3), {0, 1}, {1, 0}, 3);
  Tensor none = pad(x, {0, 0}, {0, 0});
  g.output(whole * 1.0, "whole");
  g.output(twice, "twice");
  g.output(fromConcat, "c");
  g.output(padded, "p");
  g.output(none + 0.0, "none");
  Graph s = simplifyGraph(g);
  std::string text = printGraph(s);
  EXPECT_NE(text.find("slice %x axis=1 start=5 end=12 step=6 : f32[4, 2]"), std::string::npos)
      << text;
  EXPECT_NE(text.find("slice %x axis=1 start=2 end=6 : f32[4, 4]"), std::string::npos) << text;
  EXPECT_NE(text.find("pad %x before=[1, 1] after=[1, 2] value=3"), std::string::npos) << text;
  EXPECT_EQ(text.find("concat"), std::string::npos) << text;
  // And the simplified graph computes what the original does.
  std::vector<HostTensor> ins = randomInputs(g, 3);
  std::vector<HostTensor> want = evaluate(g, ins), got = evaluate(s, ins);
  ASSERT_EQ(want.size(), got.size());
  for (size_t o = 0; o < want.size(); ++o)
    EXPECT_EQ(valuesOf(want[o]), valuesOf(got[o])) << "output " << o;
}

// ---- fusion: no copy kernels

namespace {

size_t kernelsOf(const Graph &g, bool fusion) {
  CompileOptions o;
  o.fusion = fusion;
  o.stopAfter = Stage::Cuda;
  return compileGraph(g, o).numKernels();
}

std::string cudaOf(const Graph &g) {
  CompileOptions o;
  o.stopAfter = Stage::Cuda;
  CompiledGraph c = compileGraph(g, o);
  std::string all;
  for (const CompiledKernel &k : c.detail->kernels)
    all += k.cuda;
  return all;
}

} // namespace

TEST(DataMovement, SlicePadConcatIotaFuseIntoOneKernel) {
  Graph g("rope_like");
  Tensor x = g.input("x", DType::F16, {2, 16, 4, 8});
  Tensor lo = slice(x, 3, 0, 4), hi = slice(x, 3, 4, 8);
  Tensor rot = concat({-hi, lo}, 3);
  Tensor pos = iota(g, {2, 16, 4, 8}, 1, DType::F32).cast(DType::F16);
  g.output(x * pos + rot, "y");
  EXPECT_EQ(kernelsOf(g, true), 1u);
  // Unfused: neg, concat, iota, cast, mul, add; the slices are free.
  EXPECT_EQ(kernelsOf(g, false), 6u);
}

TEST(DataMovement, SliceAndPadEmitNoCopyKernel) {
  Graph g("views");
  Tensor x = g.input("x", DType::F32, {8, 33});
  g.output(exp(pad(slice(x, 1, 1, 33, 2), {1, 0}, {0, 3}, -1)), "y");
  EXPECT_EQ(kernelsOf(g, true), 1u);
  EXPECT_EQ(kernelsOf(g, false), 1u); // exp alone
  std::string cuda = cudaOf(g);
  EXPECT_NE(cuda.find("mj_clamp("), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("? x_v : (-1.0f)"), std::string::npos) << cuda;
}

TEST(DataMovement, PaddedRowsFuseIntoTheirReduction) {
  // A softmax over a row padded with -inf: one kernel, the pad in its prologue.
  Graph g("padded_softmax");
  Tensor x = g.input("x", DType::F32, {64, 1000});
  g.output(softmax(pad(x, {0, 0}, {0, 24}, -INFINITY), 1), "y");
  EXPECT_EQ(kernelsOf(g, true), 1u);
}

TEST(DataMovement, PadFeedingAMatmulIsStored) {
  // A matmul reads its operands from memory through plain views; a pad has a
  // predicate, so it is stored by a kernel of its own.
  Graph g("mm");
  Tensor a = g.input("a", DType::F32, {30, 30});
  Tensor b = g.input("b", DType::F32, {32, 8});
  g.output(matmul(pad(a, {0, 0}, {2, 2}), b), "y");
  EXPECT_EQ(kernelsOf(g, true), 2u);
  Graph h("mm_slice");
  Tensor c = h.input("c", DType::F32, {32, 64});
  Tensor d = h.input("d", DType::F32, {32, 8});
  h.output(matmul(slice(c, 1, 0, 32), d), "y"); // an affine view: read in place
  EXPECT_EQ(kernelsOf(h, true), 1u);
}

// ---- take and take_along_axis

TEST(Gather, ShapesFollowNumpy) {
  Graph g("t");
  Tensor t = g.input("t", DType::F32, {5, 6, 7});
  Tensor i = g.input("i", DType::I32, {2, 3});
  EXPECT_EQ(take(t, i, 0).shape(), Shape({2, 3, 6, 7}));
  EXPECT_EQ(take(t, i, 1).shape(), Shape({5, 2, 3, 7}));
  EXPECT_EQ(take(t, i, -1).shape(), Shape({5, 6, 2, 3}));
  Tensor s = g.input("s", DType::I32, Shape{});
  EXPECT_EQ(take(t, s, 1).shape(), Shape({5, 7}));
  Tensor j = g.input("j", DType::I32, {5, 2, 1});
  EXPECT_EQ(takeAlongAxis(t, j, 1).shape(), Shape({5, 2, 7}));
}

TEST(Gather, ErrorsGiveTheNumbers) {
  Graph g("t");
  Tensor t = g.input("t", DType::F32, {5, 6});
  Tensor f = g.input("f", DType::F32, {3});
  Tensor i = g.input("i", DType::I32, {3});
  Tensor j = g.input("j", DType::I32, {4, 2});
  EXPECT_EQ(graphErrorOf([&] { take(t, f, 0); }),
            "take: the indices %f have dtype f32 but must be i32 or i64; cast them first (e.g. "
            "`f.cast(DType::I32)`)");
  EXPECT_EQ(graphErrorOf([&] { take(t, i, 2); }),
            "take: axis 2 is out of range for rank 2 (valid: -2..1)");
  EXPECT_EQ(graphErrorOf([&] { takeAlongAxis(t, i, 1); }),
            "take_along_axis: the indices %i have rank 1 but %t has rank 2; they need one rank "
            "(reshape the indices, e.g. to [N, 1])");
  EXPECT_EQ(graphErrorOf([&] { takeAlongAxis(t, j, 1); }),
            "take_along_axis: [5, 6] and the indices [4, 2] do not broadcast (dim 0: 5 vs 4); "
            "only the axis 1 may differ");
  Tensor big = g.input("big", DType::I32, {1, 1, 1, 1, 1, 1, 1, 1});
  EXPECT_EQ(graphErrorOf([&] { take(t, big, 0); }),
            "take: the result would have rank 9 (0 before the axis, 8 of the indices, 1 after); "
            "at most 8");
}

TEST(Gather, TextRoundTrips) {
  const char *text = R"(graph g(%t: f16[5, 6], %i: i32[2, 3], %j: i32[5, 1]) {
  %a = take %t, %i axis=1 : f16[5, 2, 3]
  %b = take_along_axis %t, %j axis=1 : f16[5, 1]
  return %a, %b
}
)";
  EXPECT_EQ(printGraph(parseGraphs(text, "t.mj")[0]), text);
  EXPECT_EQ(parseErrorOf("graph g(%t: f32[5], %i: i32[2]) {\n  %a = take %t, %i\n  return %a\n}\n"),
            "t.mj:2:8: error: take needs the attribute axis=...");
}

TEST(Gather, ReferenceClampsIndicesAtBothEnds) {
  Graph g("t");
  Tensor t = g.input("t", DType::F32, {4, 2}); // rows 0 1 / 2 3 / 4 5 / 6 7
  Tensor i = g.input("i", DType::I32, {5});
  g.output(take(t, i, 0), "rows");
  g.output(take(t, i, 1), "cols");
  HostTensor ids(DType::I32, Shape{5});
  for (int k = 0; k < 5; ++k)
    ids.set(k, std::vector<double>{0, 3, -1, 4, 2147483647}[k]); // ends and beyond
  std::vector<HostTensor> outs = evaluate(g, {counting(DType::F32, {4, 2}), ids});
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<double>{0, 1, 6, 7, 0, 1, 6, 7, 6, 7}));
  EXPECT_EQ(valuesOf(outs[1]),
            (std::vector<double>{0, 1, 0, 1, 1, 2, 3, 2, 3, 3, 4, 5, 4, 5, 5, 6, 7, 6, 7, 7}));
}

TEST(Gather, ReferenceTakeAlongAxisPicksPerRow) {
  Graph g("t");
  Tensor x = g.input("x", DType::I32, {3, 4}); // 0..11
  Tensor l = g.input("l", DType::I32, {3, 1});
  g.output(takeAlongAxis(x, l, 1), "picked");
  Tensor c = g.input("c", DType::I32, {1, 4});
  g.output(takeAlongAxis(x, c, 0), "cols"); // broadcast along the other axis
  HostTensor labels(DType::I32, Shape{3, 1}), cols(DType::I32, Shape{1, 4});
  labels.set(0, 3);
  labels.set(1, -5); // clamped to 0
  labels.set(2, 9);  // clamped to 3
  for (int k = 0; k < 4; ++k)
    cols.set(k, 2 - k); // 2, 1, 0, -1 -> rows 2, 1, 0, 0
  std::vector<HostTensor> outs = evaluate(g, {counting(DType::I32, {3, 4}), labels, cols});
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<double>{3, 4, 11}));
  EXPECT_EQ(valuesOf(outs[1]), (std::vector<double>{8, 5, 2, 3}));
}

TEST(Gather, EmbeddingAndCrossEntropyAreOneKernel) {
  Graph g("emb_ln");
  Tensor table = g.input("table", DType::F32, {1000, 256});
  Tensor ids = g.input("ids", DType::I32, {64});
  g.output(layerNorm(take(table, ids, 0)), "y");
  EXPECT_EQ(kernelsOf(g, true), 1u);
  Graph h("ce");
  Tensor logits = h.input("logits", DType::F32, {64, 1000});
  Tensor labels = h.input("labels", DType::I32, {64});
  Tensor m = max(logits, {1}, true);
  Tensor lse = log(sum(exp(logits - m), {1}, true)) + m;
  h.output(lse - takeAlongAxis(logits, labels.reshape({64, 1}), 1), "loss");
  EXPECT_EQ(kernelsOf(h, true), 1u);
  std::string cuda = cudaOf(h);
  EXPECT_NE(cuda.find("mj_clamp(labels_v, 999)"), std::string::npos) << cuda;
}

// ---- argmax and argmin

TEST(ArgReduction, BuilderChecks) {
  Graph g("a");
  Tensor x = g.input("x", DType::F16, {4, 6});
  EXPECT_EQ(argmax(x, 1).shape(), Shape({4}));
  EXPECT_EQ(argmax(x, 1).dtype(), DType::I32);
  EXPECT_EQ(argmin(x, -2, true).shape(), Shape({1, 6}));
  EXPECT_EQ(graphErrorOf([&] { argmax(x, 2); }),
            "argmax: axis 2 is out of range for rank 2 (valid: -2..1)");
  EXPECT_EQ(graphErrorOf([&] { reduce(OpKind::Argmin, x, {0, 1}); }),
            "argmin: takes one axis, got axes=[0, 1]");
  Tensor b = g.input("b", DType::Bool, {4});
  EXPECT_NE(graphErrorOf([&] { argmax(b, 0); }).find("argmax: operand %b has dtype bool"),
            std::string::npos);
}

TEST(ArgReduction, TextRoundTripsAndNeedsAnAxis) {
  const char *text = R"(graph g(%x: f32[4, 6]) {
  %a = argmax %x axis=1 : i32[4]
  %b = argmin %x axis=0 keepdim=true : i32[1, 6]
  return %a, %b
}
)";
  EXPECT_EQ(printGraph(parseGraphs(text, "t.mj")[0]), text);
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  %a = argmax %x\n  return %a\n}\n"),
            "t.mj:2:8: error: argmax needs the attribute axis=...");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  %a = argmax %x axes=[0]\n  return %a\n}\n"),
            "t.mj:2:18: error: unknown attribute 'axes' for argmax (expected: axis, keepdim)");
}

TEST(ArgReduction, ReferenceTiesGoLowAndNaNWins) {
  Graph g("a");
  Tensor x = g.input("x", DType::F32, {5, 4});
  g.output(argmax(x, 1), "max");
  g.output(argmin(x, 1), "min");
  g.output(argmax(x, 0), "cols");
  const double nan = NAN, inf = INFINITY;
  std::vector<double> rows = {
      3, 1, 3, 2,          // tie for the max: 0; min at 1
      -1, -1, -1, -1,      // all equal: 0 and 0
      nan, 5, nan, -inf,   // the first NaN wins both ways
      -inf, -inf, -inf, 7, // the max at the last position; the min ties: 0
      2, nan, 9, 9};       // NaN at 1
  HostTensor in(DType::F32, Shape{5, 4});
  for (size_t k = 0; k < rows.size(); ++k)
    in.set(static_cast<int64_t>(k), rows[k]);
  std::vector<HostTensor> outs = evaluate(g, {in});
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<double>{0, 0, 0, 3, 1}));
  EXPECT_EQ(valuesOf(outs[1]), (std::vector<double>{1, 0, 0, 0, 1}));
  EXPECT_EQ(valuesOf(outs[2]), (std::vector<double>{2, 4, 2, 4}));
}

TEST(ArgReduction, IntegersAndTheLastPosition) {
  Graph g("a");
  Tensor x = g.input("x", DType::I32, {2, 3}); // 0..5
  g.output(argmax(x, 1, true), "max");
  g.output(argmin(x, 0), "min");
  std::vector<HostTensor> outs = evaluate(g, {counting(DType::I32, {2, 3})});
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<double>{2, 2}));
  EXPECT_EQ(valuesOf(outs[1]), (std::vector<double>{0, 0, 0}));
}

TEST(ArgReduction, SoftmaxAndArgmaxAreOneKernel) {
  Graph g("decode");
  Tensor logits = g.input("logits", DType::F32, {8, 32000});
  g.output(argmax(softmax(logits, 1), 1), "token");
  EXPECT_EQ(kernelsOf(g, true), 1u);
  std::string cuda = cudaOf(g);
  EXPECT_NE(cuda.find("mj_arg_update<true>("), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("mj_block_argreduce<true, "), std::string::npos) << cuda;
  // The argmax of a size-1 axis is 0, not the value (simplify keeps it).
  Graph h("one");
  Tensor x = h.input("x", DType::F32, {4, 1});
  h.output(argmax(x, 1), "a");
  EXPECT_EQ(evalCounting(simplifyGraph(h)), (std::vector<double>{0, 0, 0, 0}));
}

// ---- cumsum and cumprod

TEST(Scan, BuilderTextAndReference) {
  Graph g("s");
  Tensor x = g.input("x", DType::I32, {2, 3}); // 0 1 2 / 3 4 5
  g.output(cumsum(x, 1), "rows");
  g.output(cumprod(x + 1, 0), "cols");
  g.output(cumsum(x, -2), "neg");
  std::vector<HostTensor> outs = evaluate(g, {counting(DType::I32, {2, 3})});
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<double>{0, 1, 3, 3, 7, 12}));
  EXPECT_EQ(valuesOf(outs[1]), (std::vector<double>{1, 2, 3, 4, 10, 18}));
  EXPECT_EQ(valuesOf(outs[2]), (std::vector<double>{0, 1, 2, 3, 5, 7}));
  EXPECT_EQ(graphErrorOf([&] { cumsum(x, 2); }),
            "cumsum: axis 2 is out of range for rank 2 (valid: -2..1)");
  Tensor b = g.input("b", DType::Bool, {3});
  EXPECT_NE(graphErrorOf([&] { cumprod(b, 0); }).find("cumprod: operand %b has dtype bool"),
            std::string::npos);
  const char *text = R"(graph g(%x: f16[4, 6]) {
  %a = cumsum %x axis=1 : f16[4, 6]
  %b = cumprod %x axis=0 : f16[4, 6]
  return %a, %b
}
)";
  EXPECT_EQ(printGraph(parseGraphs(text, "t.mj")[0]), text);
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  %a = cumsum %x\n  return %a\n}\n"),
            "t.mj:2:8: error: cumsum needs the attribute axis=...");
}

TEST(Scan, AReversedScanRunsFromTheEnd) {
  Graph g("r");
  Tensor x = g.input("x", DType::I32, {2, 3}); // 0 1 2 / 3 4 5
  Tensor l = g.input("l", DType::I64, {3});
  g.output(cumsum(x, 1, /*reverse=*/true), "rows");
  g.output(cumprod(x + 1, 0, /*reverse=*/true), "cols");
  g.output(cumsum(l, 0, /*reverse=*/true), "long");
  HostTensor longs(DType::I64, Shape{3});
  for (int k = 0; k < 3; ++k)
    longs.setI64(k, int64_t(1) << (40 + k));
  std::vector<HostTensor> outs = evaluate(g, {counting(DType::I32, {2, 3}), longs});
  EXPECT_EQ(valuesOf(outs[0]), (std::vector<double>{3, 3, 2, 12, 9, 5}));
  EXPECT_EQ(valuesOf(outs[1]), (std::vector<double>{4, 10, 18, 4, 5, 6}));
  EXPECT_EQ(outs[2].getI64(0), (int64_t(7) << 40));
  EXPECT_EQ(outs[2].getI64(2), (int64_t(1) << 42));
  const char *text = R"(graph g(%x: f32[4, 6]) {
  %a = cumsum %x axis=1 reverse=true : f32[4, 6]
  %b = cumprod %x axis=0 : f32[4, 6]
  return %a, %b
}
)";
  EXPECT_EQ(printGraph(parseGraphs(text, "t.mj")[0]), text);
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  %a = cumsum %x axis=0 reverse=1\n  return %a\n}\n"),
            "t.mj:2:33: error: expected true or false, got '1'");
}

TEST(Scan, ReferenceWrapsIntegersAndPropagatesNaN) {
  Graph g("s");
  Tensor x = g.input("x", DType::I32, {3});
  g.output(cumprod(x, 0), "p");
  HostTensor big(DType::I32, Shape{3});
  big.set(0, 65536);
  big.set(1, 65536);
  big.set(2, 3);
  EXPECT_EQ(valuesOf(evaluate(g, {big})[0]), (std::vector<double>{65536, 0, 0})); // 2^32 wraps
  Graph h("n");
  Tensor y = h.input("y", DType::F32, {4});
  h.output(cumsum(y, 0), "s");
  HostTensor v(DType::F32, Shape{4});
  v.set(0, 1);
  v.set(1, NAN);
  v.set(2, 2);
  v.set(3, 3);
  std::vector<double> s = valuesOf(evaluate(h, {v})[0]);
  EXPECT_EQ(s[0], 1);
  EXPECT_TRUE(std::isnan(s[1]) && std::isnan(s[3]));
}

TEST(Scan, AKernelOfItsOwnWithItsPrologueAndEpilogue) {
  Graph g("s");
  Tensor x = g.input("x", DType::F16, {7, 3000});
  g.output(cumsum(exp(x), 1) * 2.0, "y");
  CompileOptions o;
  o.stopAfter = Stage::Cuda;
  CompiledGraph c = compileGraph(g, o);
  ASSERT_EQ(c.numKernels(), 1u);
  EXPECT_EQ(c.detail->kernels[0].name, "scan_cumsum_k0");
  EXPECT_EQ(c.detail->kernels[0].schedule.kind(), ScheduleKind::Scan);
  EXPECT_NE(c.detail->kernels[0].cuda.find("mj_warp_scan<MjSum>("), std::string::npos);
  EXPECT_NE(c.detail->kernels[0].cuda.find("expf("), std::string::npos); // the prologue
  // A reduction of a scan reads it from memory.
  Graph h("t");
  Tensor y = h.input("y", DType::F32, {64, 100});
  h.output(sum(cumprod(y, 0), {1}), "s");
  EXPECT_EQ(kernelsOf(h, true), 2u);
  EXPECT_EQ(kernelsOf(h, false), 2u);
}

TEST(Gather, OutOfRangeIndicesAreCounted) {
  Graph g("t");
  Tensor t = g.input("t", DType::F32, {4, 2});
  Tensor i = g.input("i", DType::I32, {5});
  g.output(take(t, i, 0).named("rows"), "rows");
  g.output(exp(t), "e");
  HostTensor ids(DType::I32, Shape{5});
  for (int k = 0; k < 5; ++k)
    ids.set(k, std::vector<double>{0, 3, -1, 4, 2}[k]);
  std::vector<OutOfRangeIndices> o = outOfRangeIndices(g, {counting(DType::F32, {4, 2}), ids});
  ASSERT_EQ(o.size(), 1u);
  EXPECT_EQ(g.node(o[0].gather).name, "rows");
  EXPECT_EQ(o[0].outside, 2);
  EXPECT_EQ(o[0].total, 5);
  EXPECT_EQ(o[0].size, 4);
  Graph h("none");
  Tensor x = h.input("x", DType::F32, {3});
  h.output(exp(x), "y");
  EXPECT_TRUE(outOfRangeIndices(h, {counting(DType::F32, {3})}).empty());
}

TEST(Scan, TheEpilogueFusesAndTheScanIsNotStored) {
  Graph g("s");
  Tensor x = g.input("x", DType::F32, {8, 500});
  Tensor c = cumsum(exp(x), 1).named("c");
  g.output(c * 2.0 + cumprod(x, 1), "y");
  FusionPlan p = fuseGraph(g, true);
  ASSERT_EQ(p.kernels.size(), 1u);
  EXPECT_EQ(p.kernels[0].kind, KernelKind::Scan);
  EXPECT_LT(p.storedBy[c.id()], 0);
  // A scan of a scan reads the inner one from memory; a scan along another
  // axis is a kernel of its own.
  Graph h("ss");
  Tensor y = h.input("y", DType::F32, {8, 500});
  h.output(cumsum(cumsum(y, 1), 1) + cumsum(y, 0), "z");
  FusionPlan q = fuseGraph(h, true);
  EXPECT_EQ(q.kernels.size(), 3u);
  EXPECT_EQ(kernelsOf(h, true), 3u);
}
