//===- tests/unit/EmptyTensorTest.cpp - tensors with a dimension of 0 -----===//
// Empty tensors in the IR (issue 42): shapes, named sizes bound to 0, the
// type rules of each op next to an empty operand and their errors, the CPU
// reference's values (a sum over an empty axis is 0, a mean NaN, a matmul
// with K = 0 zeros), gradients, host tensors and .npy files of no element.
//===----------------------------------------------------------------------===//
#include "ir/Bind.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Npy.h"
#include "ir/Parser.h"

#include "tests/support/Expect.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

using namespace minijit;

namespace {

Graph parse(const std::string &text) { return parseGraphs(text, "t.mj").at(0); }

/// The message of the error parsing `text` throws, "" when it parses.
std::string parseErrorOf(const std::string &text) {
  try {
    parse(text);
  } catch (const Error &e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// A tensor of `shape` holding 1, 2, 3, ... (cast to `t`).
HostTensor counting(const Shape &shape, DType t = DType::F32) {
  HostTensor h(t, shape);
  for (int64_t i = 0; i < h.numel(); ++i)
    h.set(i, static_cast<double>(i % 7 + 1));
  return h;
}

} // namespace

TEST(EmptyTensor, ShapesWithAZeroAreValid) {
  Shape s{0, 8};
  EXPECT_EQ(s.numel(), 0);
  EXPECT_TRUE(s.isEmpty());
  EXPECT_FALSE(Shape{}.isEmpty()) << "a scalar has one element";
  EXPECT_FALSE((Shape{Dim("B"), 8}).isEmpty()) << "not bound: not known to be empty";
  EXPECT_NO_THROW(checkShape(s, "x"));
  EXPECT_EQ(graphErrorOf([] { checkShape(Shape{-2, 8}, "x"); }),
            "x: dimension 0 of [-2, 8] is -2; dimensions must be at least 0");
  EXPECT_EQ(broadcastShapes(Shape{1, 8}, Shape{0, 8}, "add"), (Shape{0, 8}))
      << "a 1 stretches to 0, as numpy's";
  EXPECT_EQ(graphErrorOf([] { broadcastShapes(Shape{2, 8}, Shape{0, 8}, "add"); }),
            "add: shapes [2, 8] and [0, 8] do not broadcast (dim 0: 2 vs 0)");
}

TEST(EmptyTensor, ArgumentsLiteralsIotaAndRandomTakeAZero) {
  Graph g = parse("graph g(%x: f32[0, 17], %s: i32[]) {\n"
                  "  %f = full shape=[13, 0] value=2\n"
                  "  %i = iota shape=[0, 3] axis=1 dtype=i32\n"
                  "  %r = rand %s, 0 shape=[0]\n"
                  "  return %x, %f, %i, %r\n"
                  "}\n");
  EXPECT_EQ(g.node(g.outputs()[1]).shape, (Shape{13, 0}));
  std::vector<HostTensor> outs =
      evaluate(g, {HostTensor(DType::F32, {0, 17}), HostTensor(DType::I32, {})});
  ASSERT_EQ(outs.size(), 4u);
  for (const HostTensor &o : outs) {
    EXPECT_EQ(o.numel(), 0);
    EXPECT_EQ(o.bytes(), 0u);
  }
  EXPECT_EQ(outs[3].shape(), (Shape{0}));
}

TEST(EmptyTensor, NamedSizesMayBeBoundToZero) {
  Graph g = parse("graph g(%x: f32[B, 8]) {\n  %y = exp %x\n  return %y\n}\n");
  DimBindings sizes;
  EXPECT_EQ(parseDimBinding("B=0", sizes), "");
  EXPECT_EQ(sizes.at("B"), 0);
  EXPECT_EQ(parseDimBinding("B=-1", sizes),
            "--dim B=-1: the size must be at least 0 (0: an empty dimension)");
  Graph bound = bindDims(g, {{"B", 0}});
  EXPECT_EQ(bound.node(bound.outputs()[0]).shape.boundStr(), "[B=0, 8]");
  EXPECT_TRUE(bound.node(bound.outputs()[0]).shape.isEmpty());
  EXPECT_EQ(graphErrorOf([&] { bindDims(g, {{"B", -3}}); }),
            "the named dimension B is given the size -3; sizes are at least 0");
  // From the inputs' shapes: an evaluation on a [0, 8] array binds B to 0.
  std::vector<HostTensor> outs = evaluate(g, {HostTensor(DType::F32, {0, 8})});
  EXPECT_EQ(outs.at(0).shape(), (Shape{0, 8}));
}

TEST(EmptyTensor, ReshapeKeepsTheZeroAndCannotInferBesideIt) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {0, 8});
  EXPECT_EQ(reshape(x, {0, 4, 2}).shape(), (Shape{0, 4, 2}));
  EXPECT_EQ(reshape(x, {-1, 4}).shape(), (Shape{0, 4})) << "0 elements over 4 per row";
  EXPECT_EQ(reshape(x, {2, -1}).shape(), (Shape{2, 0}));
  EXPECT_EQ(graphErrorOf([&] { reshape(x, {0, -1}); }),
            "reshape: cannot infer the -1 of shape=[0, -1]: dim 0 is 0, so every size would do "
            "(PyTorch refuses it too); give that dimension instead of -1");
  EXPECT_TRUE(contains(graphErrorOf([&] { reshape(x, {1, 8}); }), "cannot reshape [0, 8]"));
}

TEST(EmptyTensor, SliceOfNothingIsEmptyAndAnEndBeforeTheStartIsRefused) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {13, 17});
  EXPECT_EQ(slice(x, 1, 5, 5).shape(), (Shape{13, 0}));
  EXPECT_EQ(slice(x, 1, 17, 17).shape(), (Shape{13, 0})) << "x[:, 17:17], as numpy";
  EXPECT_EQ(slice(x, 0, -3, -3, 2).shape(), (Shape{0, 17}));
  EXPECT_EQ(graphErrorOf([&] { slice(x, 1, 6, 5); }),
            "slice: start=6 end=5 has its end before its start on axis 1 (size 17); end == start "
            "selects no element (an empty slice)");
  EXPECT_EQ(graphErrorOf([&] { slice(x, 1, 18, 18); }),
            "slice: start=18 is out of range for axis 1 of size 17 (valid: -17..17)");
  Tensor e = g.input("e", DType::F32, {0, 4});
  EXPECT_EQ(slice(e, 0, 0, 0).shape(), (Shape{0, 4})) << "the one slice of an empty axis";
}

TEST(EmptyTensor, MaxMinAndArgReductionsOverAnEmptyAxisAreErrors) {
  std::string text = "graph g(%x: f32[0, 5]) {\n  %m = max %x axes=[0]\n  return %m\n}\n";
  EXPECT_EQ(parseErrorOf(text),
            "t.mj:2:8: error: max: axis 0 of %x (f32[0, 5]) has size 0: the max of no elements "
            "has no value (sum, prod and mean of none are 0, 1 and NaN)");
  EXPECT_TRUE(contains(parseErrorOf("graph g(%x: i32[3, 0]) {\n  %m = argmin %x axis=1\n"
                                    "  return %m\n}\n"),
                       "argmin: axis 1 of %x (i32[3, 0]) has size 0"));
  EXPECT_TRUE(contains(parseErrorOf("graph g(%x: f32[0]) {\n  %m = min %x\n  return %m\n}\n"),
                       "min: axis 0 of %x (f32[0]) has size 0"))
      << "every axis, the default, includes the empty one";
  // Over the non-empty axis the result is empty, and fine.
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {0, 5});
  EXPECT_EQ(max(x, {1}).shape(), (Shape{0}));
  EXPECT_EQ(argmax(x, 1).shape(), (Shape{0}));
}

TEST(EmptyTensor, AMaxOverANameBoundToZeroNamesTheNode) {
  Graph g = parse("graph g(%x: f32[B, 5]) {\n  %m = max %x axes=[0]\n  return %m\n}\n");
  EXPECT_EQ(graphErrorOf([&] { bindDims(g, {{"B", 0}}); }),
            "%m with B=0: max: axis 0 of %x (f32[B=0, 5]) has size 0: the max of no elements has "
            "no value (sum, prod and mean of none are 0, 1 and NaN)");
  EXPECT_NO_THROW(bindDims(g, {{"B", 3}}));
}

TEST(EmptyTensor, GathersIntoAnEmptyAxisNeedEmptyIndices) {
  Graph g("g");
  Tensor t = g.input("t", DType::F32, {5, 0});
  Tensor ids = g.input("ids", DType::I32, {3});
  Tensor none = g.input("none", DType::I32, {0});
  EXPECT_EQ(graphErrorOf([&] { take(t, ids, 1); }),
            "take: axis 1 of %t (f32[5, 0]) has size 0, so no index into it is valid, but the "
            "result [5, 3] has 15 elements to read; indices into an empty axis must be empty too");
  EXPECT_EQ(take(t, none, 1).shape(), (Shape{5, 0}));
  EXPECT_EQ(take(t, ids, 0).shape(), (Shape{3, 0})) << "empty: reads nothing";
  Tensor x = g.input("x", DType::F32, {4, 6});
  EXPECT_EQ(take(x, none, 0).shape(), (Shape{0, 6}));
  Tensor col = g.input("col", DType::I32, {4, 1});
  Tensor e = g.input("e", DType::F32, {4, 0});
  EXPECT_TRUE(contains(graphErrorOf([&] { takeAlongAxis(e, col, 1); }),
                       "take_along_axis: axis 1 of %e (f32[4, 0]) has size 0"));
  Tensor noCol = g.input("noCol", DType::I32, {4, 0});
  EXPECT_EQ(takeAlongAxis(e, noCol, 1).shape(), (Shape{4, 0}));
}

TEST(EmptyTensor, ReductionsOverAnEmptyAxisGiveTheirIdentity) {
  Graph g = parse("graph g(%x: f32[0, 17], %i: i32[13, 0], %l: i64[0], %h: f16[0, 3]) {\n"
                  "  %s = sum %x axes=[0]\n"
                  "  %p = prod %x axes=[0]\n"
                  "  %m = mean %x axes=[0]\n"
                  "  %si = sum %i axes=[1]\n"
                  "  %pi = prod %i axes=[1]\n"
                  "  %sl = sum %l\n"
                  "  %pl = prod %l\n"
                  "  %mh = mean %h axes=[0] keepdim=true\n"
                  "  %all = sum %x\n"
                  "  %rows = sum %x axes=[1]\n"
                  "  return %s, %p, %m, %si, %pi, %sl, %pl, %mh, %all, %rows\n"
                  "}\n");
  std::vector<HostTensor> o =
      evaluate(g, {HostTensor(DType::F32, {0, 17}), HostTensor(DType::I32, {13, 0}),
                   HostTensor(DType::I64, {0}), HostTensor(DType::F16, {0, 3})});
  ASSERT_EQ(o.size(), 10u);
  auto every = [](const HostTensor &t, auto pred) {
    for (int64_t i = 0; i < t.numel(); ++i)
      if (!pred(t.get(i)))
        return false;
    return t.numel() > 0;
  };
  EXPECT_EQ(o[0].shape(), (Shape{17}));
  EXPECT_TRUE(every(o[0], [](double v) { return v == 0 && !std::signbit(v); }));
  EXPECT_TRUE(every(o[1], [](double v) { return v == 1; }));
  EXPECT_TRUE(every(o[2], [](double v) { return std::isnan(v); })) << "0/0, as PyTorch";
  EXPECT_EQ(o[3].shape(), (Shape{13}));
  EXPECT_TRUE(every(o[3], [](double v) { return v == 0; }));
  EXPECT_TRUE(every(o[4], [](double v) { return v == 1; }));
  EXPECT_EQ(o[5].getI64(0), 0);
  EXPECT_EQ(o[6].getI64(0), 1);
  EXPECT_EQ(o[7].shape(), (Shape{1, 3}));
  EXPECT_TRUE(every(o[7], [](double v) { return std::isnan(v); }));
  EXPECT_EQ(o[8].get(0), 0);
  EXPECT_EQ(o[9].shape(), (Shape{0})) << "no row to reduce";
}

TEST(EmptyTensor, MatmulWithKZeroIsZerosAndWithMOrNZeroIsEmpty) {
  Graph g = parse("graph g(%a: f32[13, 0], %b: f32[0, 17], %c: f32[0, 5], %d: f32[5, 0]) {\n"
                  "  %k = matmul %a, %b\n"
                  "  %m = matmul %c, %d\n"
                  "  %n = matmul %d, %b\n"
                  "  return %k, %m, %n\n"
                  "}\n");
  std::vector<HostTensor> o =
      evaluate(g, {HostTensor(DType::F32, {13, 0}), HostTensor(DType::F32, {0, 17}),
                   HostTensor(DType::F32, {0, 5}), HostTensor(DType::F32, {5, 0})});
  EXPECT_EQ(o[0].shape(), (Shape{13, 17}));
  for (int64_t i = 0; i < o[0].numel(); ++i)
    ASSERT_EQ(o[0].get(i), 0) << "element " << i;
  EXPECT_EQ(o[1].shape(), (Shape{0, 0}));
  EXPECT_EQ(o[2].shape(), (Shape{5, 17}));
  EXPECT_EQ(o[2].get(5 * 17 - 1), 0);
}

TEST(EmptyTensor, ElementwiseViewsScansAndArgReductionsOfEmptyTensors) {
  Graph g = parse("graph g(%x: f32[13, 0], %r: f32[1, 0], %y: f32[0, 17]) {\n"
                  "  %a = add %x, %r\n"
                  "  %e = tanh %a\n"
                  "  %t = permute %e perm=[1, 0]\n"
                  "  %c = cumsum %x axis=0\n"
                  "  %cy = cumprod %y axis=1\n"
                  "  %am = argmax %y axis=1\n"
                  "  %s = sum %x axes=[0]\n"
                  "  %f = flip %y axes=[0]\n"
                  "  %b = broadcast %r shape=[4, 13, 0]\n"
                  "  return %t, %c, %cy, %am, %s, %f, %b\n"
                  "}\n");
  std::vector<HostTensor> o =
      evaluate(g, {HostTensor(DType::F32, {13, 0}), HostTensor(DType::F32, {1, 0}),
                   HostTensor(DType::F32, {0, 17})});
  EXPECT_EQ(o[0].shape(), (Shape{0, 13}));
  EXPECT_EQ(o[1].shape(), (Shape{13, 0})) << "a scan whose rows are empty";
  EXPECT_EQ(o[2].shape(), (Shape{0, 17})) << "a scan with no row";
  EXPECT_EQ(o[3].shape(), (Shape{0}));
  EXPECT_EQ(o[3].dtype(), DType::I32);
  EXPECT_EQ(o[4].shape(), (Shape{0})) << "the sum of no row";
  EXPECT_EQ(o[5].shape(), (Shape{0, 17}));
  EXPECT_EQ(o[6].shape(), (Shape{4, 13, 0}));
}

TEST(EmptyTensor, PadOfAnEmptyTensorIsItsBorderAndConcatSkipsEmptyOperands) {
  Graph g = parse("graph g(%x: f32[0, 3], %y: f32[4, 3]) {\n"
                  "  %p = pad %x before=[1, 0] after=[1, 2] value=2.5\n"
                  "  %c = concat %x, %y, %x axis=0\n"
                  "  %z = concat %x, %x axis=0\n"
                  "  return %p, %c, %z\n"
                  "}\n");
  HostTensor y = counting({4, 3});
  std::vector<HostTensor> o = evaluate(g, {HostTensor(DType::F32, {0, 3}), y});
  EXPECT_EQ(o[0].shape(), (Shape{2, 5}));
  for (int64_t i = 0; i < 10; ++i)
    EXPECT_EQ(o[0].get(i), 2.5);
  ASSERT_EQ(o[1].shape(), (Shape{4, 3}));
  for (int64_t i = 0; i < 12; ++i)
    EXPECT_EQ(o[1].get(i), y.get(i));
  EXPECT_EQ(o[2].shape(), (Shape{0, 3}));
}

TEST(EmptyTensor, TakeWithEmptyIndicesIsEmpty) {
  Graph g = parse("graph g(%t: f32[5, 7], %i: i32[0], %j: i64[5, 0]) {\n"
                  "  %a = take %t, %i axis=0\n"
                  "  %b = take_along_axis %t, %j axis=1\n"
                  "  return %a, %b\n"
                  "}\n");
  std::vector<HostTensor> o = evaluate(
      g, {counting({5, 7}), HostTensor(DType::I32, {0}), HostTensor(DType::I64, {5, 0})});
  EXPECT_EQ(o[0].shape(), (Shape{0, 7}));
  EXPECT_EQ(o[1].shape(), (Shape{5, 0}));
}

TEST(EmptyTensor, GradientsThroughAnEmptyBatch) {
  // loss = sum(x @ w + b) over a batch of 0 rows: 0, and every gradient 0.
  Graph g("train");
  Tensor x = g.input("x", DType::F32, {0, 17});
  Tensor w = g.input("w", DType::F32, {17, 5});
  Tensor b = g.input("b", DType::F32, {5});
  Tensor loss = sum(tanh(matmul(x, w) + b));
  g.output(loss, "loss");
  g.output(grad(loss, w), "dw");
  g.output(grad(loss, b), "db");
  g.output(grad(loss, x), "dx");
  std::vector<HostTensor> o =
      evaluate(g, {HostTensor(DType::F32, {0, 17}), counting({17, 5}), counting({5})});
  EXPECT_EQ(o[0].get(0), 0);
  ASSERT_EQ(o[1].shape(), (Shape{17, 5}));
  for (int64_t i = 0; i < o[1].numel(); ++i)
    ASSERT_EQ(o[1].get(i), 0) << "dw element " << i;
  for (int64_t i = 0; i < 5; ++i)
    EXPECT_EQ(o[2].get(i), 0);
  EXPECT_EQ(o[3].shape(), (Shape{0, 17}));
}

TEST(EmptyTensor, AMeanOverAnEmptyBatchIsNaNAndItsGradientZero) {
  Graph g("train");
  Tensor x = g.input("x", DType::F32, {0, 3});
  Tensor w = g.input("w", DType::F32, {3});
  Tensor loss = mean(x * w);
  g.output(loss, "loss");
  g.output(grad(loss, w), "dw");
  std::vector<HostTensor> o = evaluate(g, {HostTensor(DType::F32, {0, 3}), counting({3})});
  EXPECT_TRUE(std::isnan(o[0].get(0))) << "mean of nothing, as torch.mean";
  for (int64_t i = 0; i < 3; ++i)
    EXPECT_EQ(o[1].get(i), 0) << "a sum of no contribution, as PyTorch's backward gives";
}

TEST(EmptyTensor, HostTensorsOfNoElement) {
  HostTensor t(DType::F32, {13, 0});
  EXPECT_EQ(t.numel(), 0);
  EXPECT_EQ(t.bytes(), 0u);
  EXPECT_THROW(t.get(0), GraphError);
  HostTensor d = HostTensor::fromData(DType::I32, Shape{0, 17}, nullptr, 0);
  EXPECT_EQ(d.shape(), (Shape{0, 17}));
  EXPECT_EQ(HostTensor::random(DType::F16, {0, 5}, 3).numel(), 0);
  CompareResult r = compareTensors(t, HostTensor(DType::F32, {13, 0}), Tolerance{});
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.summary, "ok (empty: no elements)");
  EXPECT_FALSE(compareTensors(t, HostTensor(DType::F32, {0, 13}), Tolerance{}).ok);
}

TEST(EmptyTensor, NpyFilesOfNoElementRoundTrip) {
  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("minijit-empty-npy", dir));
  std::string path = (dir + "/e.npy").str();
  for (DType t : {DType::F32, DType::I64, DType::Bool}) {
    HostTensor e(t, {0, 17});
    std::string bytes = npyBytes(e);
    EXPECT_NE(bytes.find("'shape': (0, 17)"), std::string::npos) << bytes;
    writeNpy(path, e);
    HostTensor back = readNpy(path, "e", std::pair(t, Shape{0, 17}));
    EXPECT_EQ(back.shape(), (Shape{0, 17}));
    EXPECT_EQ(back.dtype(), t);
  }
  HostTensor one(DType::F32, {0});
  writeNpy(path, one);
  EXPECT_NE(npyBytes(one).find("'shape': (0,)"), std::string::npos);
  EXPECT_EQ(readNpy(path, "e").shape(), (Shape{0}));
  llvm::sys::fs::remove_directories(dir);
}
