//===- tests/gpu/OpsTest.cpp - every op and dtype on the GPU --------------===//
#include "compiler/CompileDetail.h"
#include "tests/gpu/GpuTest.h"

namespace minijit {
namespace {

const int64_t kSizes[] = {1, 3, 1023, 1025, (1 << 20) + 7};

std::vector<OpKind> opsOf(OpClass cls) {
  std::vector<OpKind> ops;
  for (unsigned i = 0; i < kNumOps; ++i)
    if (opClass(static_cast<OpKind>(i)) == cls)
      ops.push_back(static_cast<OpKind>(i));
  return ops;
}

bool acceptsType(OpKind op, DType t) {
  switch (opInfo(op).operands) {
  case OperandTypes::Any: return true;
  case OperandTypes::Numeric: return t != DType::Bool;
  case OperandTypes::Float: return isFloat(t);
  case OperandTypes::Bool: return t == DType::Bool;
  }
  return false;
}

const DType kTypes[] = {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool};

class Ops : public GpuTest {};

TEST_F(Ops, EveryUnaryOpAndDTypeAtOddSizes) {
  for (OpKind op : opsOf(OpClass::Unary))
    for (DType t : kTypes) {
      if (!acceptsType(op, t))
        continue;
      for (int64_t n : kSizes) {
        if (t != DType::F32 && n == 1023)
          continue; // f32 covers every size; the others most
        Graph g(std::string(opName(op)) + "_" + std::string(dtypeName(t)));
        Tensor x = g.input("x", t, {n});
        g.output(unary(op, x), "y");
        expectMatches(g, n, /*fusedOnly=*/true);
      }
    }
}

TEST_F(Ops, EveryBinaryOpWithBroadcasting) {
  const std::pair<Shape, Shape> shapes[] = {
      {Shape{3, 5}, Shape{3, 5}},       {Shape{3, 5}, Shape{5}},
      {Shape{3, 1}, Shape{1, 5}},       {Shape{4, 3, 5}, Shape{3, 1}},
      {Shape{1}, Shape{7, 9}},          {Shape{}, Shape{6}},
      {Shape{2, 1, 4, 1}, Shape{3, 1, 5}}, {Shape{1025, 33}, Shape{33}},
      {Shape{257, 1}, Shape{257, 130}}};
  for (OpKind op : opsOf(OpClass::Binary))
    for (DType t : kTypes) {
      if (!acceptsType(op, t))
        continue;
      for (auto &[sa, sb] : shapes) {
        Graph g(std::string(opName(op)) + "_" + std::string(dtypeName(t)));
        Tensor a = g.input("a", t, sa), b = g.input("b", t, sb);
        g.output(binary(op, a, b), "y");
        expectMatches(g, 7, /*fusedOnly=*/true);
      }
    }
}

TEST_F(Ops, WhereWithBroadcastingAndLiterals) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32}) {
    Graph g(std::string("where_") + std::string(dtypeName(t)));
    Tensor c = g.input("c", DType::Bool, {33, 1});
    Tensor a = g.input("a", t, {33, 65});
    Tensor b = g.input("b", t, {65});
    g.output(where(c, a, b), "y");
    g.output(where(c, a, -3), "z");
    expectMatches(g, 3);
  }
}

TEST_F(Ops, CastBetweenEveryPairOfDTypes) {
  for (DType from : kTypes)
    for (DType to : kTypes) {
      Graph g(std::string("cast_") + std::string(dtypeName(from)) + "_" + std::string(dtypeName(to)));
      Tensor x = g.input("x", from, {1025});
      // Scale floats so float->int casts see values beyond the sign.
      Tensor v = isFloat(from) ? x * 40.0 : x;
      g.output(v.cast(to), "y");
      expectMatches(g, 5);
    }
}

TEST_F(Ops, HalfChainsComputeInF32) {
  for (DType t : {DType::F16, DType::BF16}) {
    Graph g(std::string("gelu_") + std::string(dtypeName(t)));
    Tensor x = g.input("x", t, {(1 << 20) + 7});
    g.output(0.5 * x * (1.0 + tanh(0.7978846 * (x + 0.044715 * x * x * x))), "y");
    expectMatches(g, 11);
  }
}

TEST_F(Ops, PermutedOperandsGoThroughSharedTiles) {
  // Permutes that move the innermost axis, of every rank, at sizes that
  // leave partial tiles, with a second operand contiguous, broadcast or
  // transposed too, in every dtype: the tiled template, against the
  // reference; and a permute that keeps the innermost axis stays plain.
  struct Case {
    Shape in;
    std::vector<int64_t> perm;
  };
  const Case cases[] = {{{64, 96}, {1, 0}},          {{1000, 999}, {1, 0}},
                        {{17, 33}, {1, 0}},          {{3, 70, 45}, {0, 2, 1}},
                        {{70, 3, 45}, {2, 1, 0}},    {{2, 100, 6, 66}, {0, 2, 3, 1}},
                        {{5, 40, 17, 36}, {0, 3, 1, 2}}, {{20, 33, 3, 65}, {3, 1, 2, 0}}};
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32})
    for (const Case &c : cases) {
      Graph g(std::string("tiled_") + std::string(dtypeName(t)));
      Tensor x = g.input("x", t, c.in);
      Tensor p = permute(x, c.perm);
      Shape out = g.node(p.id()).shape;
      Tensor y = g.input("y", t, out);
      Tensor row = g.input("row", t, {out[out.rank() - 1]});
      // a second transposed read of the same tensor, of another input
      Tensor z = g.input("z", t, c.in);
      g.output(p * y + row - permute(z, c.perm), "w");
      SCOPED_TRACE(std::string(dtypeName(t)) + c.in.str());
      CompileOptions opt;
      opt.compileKernels = false;
      CompiledGraph cg = compileGraph(g, opt);
      ASSERT_EQ(cg.numKernels(), 1u) << cg.fusedText();
      const TransposeSchedule *ts = cg.detail->kernels[0].schedule.getIf<TransposeSchedule>();
      EXPECT_NE(ts, nullptr) << cg.fusedText();
      if (ts) {
        EXPECT_EQ(ts->tiled.size(), 2u) << cg.fusedText();
      }
      expectMatches(g, static_cast<uint64_t>(c.in.numel() % 31));
    }
  Graph g("heads");
  Tensor x = g.input("x", DType::F16, {2, 40, 4, 64});
  g.output(permute(x, {0, 2, 1, 3}) * 0.125, "y");
  CompileOptions opt;
  opt.compileKernels = false;
  EXPECT_EQ(compileGraph(g, opt).detail->kernels[0].schedule.kind(), ScheduleKind::Pointwise);
  expectMatches(g, 3);
}

} // namespace
} // namespace minijit
