// The limits of ir/Limits.h: each is enforced with a clear error, and a graph
// at each limit goes through every stage of the compiler (up to emitting CUDA)
// without running out of stack.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "ir/Builder.h"
#include "ir/Error.h"
#include "ir/Limits.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <string>

using namespace minijit;

namespace {

/// A text file holding one graph: `ops` neg ops in a chain from %v0.
std::string chainText(int ops) {
  std::string s = "graph deep(%v0: f32[4]) {\n";
  for (int i = 1; i <= ops; ++i)
    s += "  %v" + std::to_string(i) + " = neg %v" + std::to_string(i - 1) + "\n";
  return s + "  return %v" + std::to_string(ops) + "\n}\n";
}

/// The message of the ParseError parsing `text` throws.
std::string parseErrorOf(const std::string &text) {
  try {
    parseGraphs(text, "limits.mj");
  } catch (const ParseError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no ParseError was thrown";
  return "";
}

/// Compiles `g` fused and unfused; with `nvrtc`, the fused kernels through
/// NVRTC too (each gets a CUBIN). Unfused there is a kernel per op.
void compileBothWays(const Graph &g, bool nvrtc) {
  for (bool fusion : {true, false}) {
    CompileOptions opt;
    opt.fusion = fusion;
    opt.stopAfter = fusion && nvrtc ? Stage::Ptx : Stage::Cuda;
    CompiledGraph c;
    ASSERT_NO_THROW(c = compileGraph(g, opt)) << g.name() << (fusion ? " fused" : " unfused");
    EXPECT_FALSE(c.detail->kernels.empty()) << g.name() << (fusion ? " fused" : " unfused");
    for (const ProgramKernel &k : c.program.kernels)
      EXPECT_EQ(k.cubin.empty(), !(fusion && nvrtc)) << g.name() << ": " << k.name << " has no CUBIN";
  }
}

} // namespace

TEST(Limits, RankAboveTheLimitIsRejected) {
  Graph g("g");
  EXPECT_NO_THROW(g.input("x", DType::F32, Shape(DimVector(kMaxRank, 1))));
  EXPECT_EQ(graphErrorOf([&] { g.input("y", DType::F32, Shape(DimVector(kMaxRank + 1, 1))); }),
            "input %y: rank 9 exceeds the maximum of 8");
  Tensor x = g.input("z", DType::F32, {2, 2, 2, 2, 2, 2, 2, 2});
  EXPECT_EQ(graphErrorOf([&] { x.reshape({2, 2, 2, 2, 2, 2, 2, 2, 1}); }),
            "reshape: rank 9 exceeds the maximum of 8");
}

TEST(Limits, ElementsAboveTheLimitAreRejected) {
  Graph g("g");
  const int64_t m = int64_t(1) << 20;
  EXPECT_NO_THROW(g.input("ok", DType::F32, {m, m}));
  EXPECT_EQ(graphErrorOf([&] { g.input("x", DType::F32, {m, m + 1}); }),
            "input %x: shape [1048576, 1048577] has more than 2^40 elements, the largest tensor "
            "minijit accepts");
  Tensor v = g.input("v", DType::F32, {m});
  EXPECT_EQ(graphErrorOf([&] { v.broadcast({m + 1, m}); }),
            "broadcast: shape [1048577, 1048576] has more than 2^40 elements, the largest tensor "
            "minijit accepts");
  // Inputs within the limit whose result is not.
  Tensor a = g.input("a", DType::F32, {m, 1});
  Tensor b = g.input("b", DType::F32, {1, m + 1});
  EXPECT_EQ(graphErrorOf([&] { a + b; }),
            "add: shape [1048576, 1048577] has more than 2^40 elements, the largest tensor "
            "minijit accepts");
  EXPECT_EQ(graphErrorOf([&] { matmul(a, b); }),
            "matmul result: shape [1048576, 1048577] has more than 2^40 elements, the largest "
            "tensor minijit accepts");
}

TEST(Limits, BytesFollowFromElements) {
  // kMaxTensorBytes holds because no dtype is wider than 4 bytes; a wider
  // one would need its own check.
  unsigned widest = 0;
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool}) {
    EXPECT_LE(kMaxElements * dtypeSize(d), kMaxTensorBytes) << std::string(dtypeName(d));
    widest = std::max(widest, dtypeSize(d));
  }
  EXPECT_EQ(kMaxElements * widest, kMaxTensorBytes);
}

TEST(Limits, DepthCountsTheLongestChainOfOps) {
  Graph g("g");
  Tensor x = g.input("x", DType::F32, {4});
  EXPECT_EQ(g.depth(x.id()), 0u);
  Tensor y = exp(neg(x));
  EXPECT_EQ(g.depth(y.id()), 2u);
  Tensor z = y + x; // the literal and %x are 0 deep, %y is 2
  EXPECT_EQ(g.depth(z.id()), 3u);
  EXPECT_EQ(g.depth((z * 2.0).id()), 4u);
}

TEST(Limits, GraphDeeperThanTheLimitIsRejected) {
  Graph g("deep");
  Tensor t = g.input("x", DType::F32, {4});
  for (unsigned i = 0; i < kMaxDepth; ++i)
    t = neg(t);
  EXPECT_EQ(g.depth(t.id()), kMaxDepth);
  EXPECT_EQ(graphErrorOf([&] { neg(t); }),
            "neg: a chain of 1025 ops ends here; a graph may be at most 1024 ops deep");
  // A shallower operand does not help.
  Tensor x = Tensor(&g, g.inputs()[0]);
  EXPECT_EQ(graphErrorOf([&] { t + x; }),
            "add: a chain of 1025 ops ends here; a graph may be at most 1024 ops deep");
  g.output(t, "y");
  EXPECT_NO_THROW(verifyGraph(g));
}

TEST(Limits, ParserRejectsADeepGraphWhereItGetsTooDeep) {
  // 100000 ops: the parser stops at op 1025 (line 1026) with the limit.
  EXPECT_EQ(parseErrorOf(chainText(100000)),
            "limits.mj:1026:12: error: neg: a chain of 1025 ops ends here; a graph may be at "
            "most 1024 ops deep");
  std::vector<Graph> gs = parseGraphs(chainText(kMaxDepth), "limits.mj");
  ASSERT_EQ(gs.size(), 1u);
  EXPECT_EQ(parseGraphs(printGraph(gs[0]))[0].size(), kMaxDepth + 1);
}

TEST(Limits, GraphWithMoreNodesThanTheLimitIsRejected) {
  Graph g("wide");
  Tensor x = g.input("x", DType::F32, {4});
  while (g.size() < kMaxNodes)
    neg(x);
  EXPECT_EQ(graphErrorOf([&] { neg(x); }),
            "graph 'wide' already has 65536 nodes (arguments, literals and ops), the most a graph "
            "may have");
  EXPECT_EQ(graphErrorOf([&] { g.input("y", DType::F32, {4}); }),
            "graph 'wide' already has 65536 nodes (arguments, literals and ops), the most a graph "
            "may have");
}

TEST(Limits, ParserRejectsTooManyNodesAndTooManyArguments) {
  std::string ops = "graph wide(%x: f32[4]) {\n";
  for (size_t i = 1; i <= kMaxNodes; ++i)
    ops += "  %a" + std::to_string(i) + " = neg %x\n";
  ops += "  return %x\n}\n";
  EXPECT_EQ(parseErrorOf(ops), "limits.mj:65537:13: error: graph 'wide' already has 65536 "
                               "nodes (arguments, literals and ops), the most a graph may have");
  std::string args = "graph many(";
  for (size_t i = 0; i <= kMaxNodes; ++i)
    args += (i ? ", %a" : "%a") + std::to_string(i) + ": f32[]";
  args += ") {\n  %y = neg %a0\n  return %y\n}\n";
  std::string msg = parseErrorOf(args);
  EXPECT_NE(msg.find("error: graph 'many' already has 65536 nodes"), std::string::npos) << msg;
}

TEST(Limits, ViewChainLongerThanTheLimitIsRejected) {
  Graph g("views");
  Tensor x = g.input("x", DType::F32, {6, 35});
  Tensor t = x;
  for (unsigned i = 0; i < kMaxViewChain; ++i)
    t = exp(i % 2 ? t.permute({1, 0}) : t.reshape(i % 4 ? Shape{35, 6} : Shape{10, 21}));
  EXPECT_EQ(g.viewChain(t.id()), kMaxViewChain);
  EXPECT_EQ(graphErrorOf([&] { t.reshape({210}); }),
            "reshape: a chain of 13 views (reshape, permute, broadcast) with no reduction or "
            "matmul between them ends here; at most 12 are allowed");
  // A reduction (or a matmul) starts the count again.
  Tensor r = sum(t, {1}, true);
  EXPECT_EQ(g.viewChain(r.id()), 0u);
  EXPECT_EQ(g.viewChain(r.reshape({r.shape()[1], r.shape()[0]}).id()), 1u);
  EXPECT_EQ(g.viewChain(matmul(x, x.permute({1, 0})).id()), 0u);
}

TEST(Limits, LongestViewChainCompiles) {
  // Rank-8 shapes whose reshapes and permutes do not simplify: the index
  // arithmetic nests as deep as the limit allows.
  Graph g("views8");
  Tensor t = g.input("x", DType::F32, {2, 3, 5, 7, 2, 3, 2, 1});
  const Shape shapes[] = {{3, 5, 7, 2, 2, 3, 1, 2},
                          {5, 2, 3, 7, 3, 2, 2, 1},
                          {2, 7, 5, 3, 2, 1, 3, 2},
                          {7, 3, 2, 5, 1, 2, 2, 3}};
  for (unsigned i = 0; i < kMaxViewChain; ++i)
    t = i % 2 ? t.permute({3, 0, 2, 1, 7, 5, 4, 6}) : t.reshape(shapes[(i / 2) % 4]);
  g.output(exp(t), "y");
  compileBothWays(g, /*nvrtc=*/true);
}

TEST(Limits, DeepestChainsCompile) {
  // Each at exactly kMaxDepth: elementwise ops, elementwise ops with views
  // (folded into index arithmetic), and reductions over the same rows with
  // their consumers. Up to CUDA only: NVRTC spends more than five minutes on
  // these kernels (measured 2026-12, one core), too long for the unit tests.
  {
    Graph g("unary");
    Tensor t = g.input("x", DType::F32, {64, 32});
    for (unsigned i = 0; i < kMaxDepth; ++i)
      t = i % 2 ? exp(t) : neg(t);
    g.output(t, "y");
    compileBothWays(g, /*nvrtc=*/false);
  }
  {
    // Eleven views, a reduction and a broadcast, again and again.
    Graph g("views");
    Tensor t = g.input("x", DType::F32, {6, 35});
    for (unsigned i = 0; g.depth(t.id()) + 2 < kMaxDepth; ++i) {
      if (i % 12 == 11)
        t = sum(t, {0}, true).broadcast(t.shape());
      else
        t = i % 2 ? t.permute({1, 0}) : t.reshape(i % 4 ? Shape{35, 6} : Shape{10, 21});
    }
    g.output(exp(t), "y");
    compileBothWays(g, /*nvrtc=*/false);
  }
  {
    // Reductions every 64 ops: 16 reductions in one fused kernel.
    Graph g("rows");
    Tensor x = g.input("x", DType::F32, {8, 128});
    Tensor t = x;
    for (unsigned i = 0; i < kMaxDepth; ++i)
      t = i % 64 == 0 ? sum(t, {1}, true) : (i % 64 == 1 ? x - t : sin(t));
    g.output(t, "y");
    compileBothWays(g, /*nvrtc=*/false);
  }
}
