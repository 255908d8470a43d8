// tests/support/RandomGraph: deterministic graphs that verify, round-trip and compile.
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/simplify/Simplify.h"
#include "ir/ErrorBound.h"
#include "ir/Evaluator.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"
#include "tests/support/RandomGraph.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <set>
#include <string>

using namespace minijit;

namespace {

CompileOptions cpuOnly(bool fusion) {
  CompileOptions opt;
  opt.fusion = fusion;
  opt.compileKernels = false;
  return opt;
}

} // namespace

TEST(RandomGraph, SameSeedSameGraph) {
  for (uint64_t seed : {1, 7, 123}) {
    std::string a = printGraph(randomGraph(seed)), b = printGraph(randomGraph(seed));
    EXPECT_EQ(a, b) << "seed " << seed;
  }
}

TEST(RandomGraph, SeedsGiveDifferentGraphs) {
  std::set<std::string> texts;
  for (uint64_t seed = 1; seed <= 50; ++seed)
    texts.insert(printGraph(randomGraph(seed)));
  EXPECT_GT(texts.size(), 45u);
}

TEST(RandomGraph, NamedAfterTheSeed) { EXPECT_EQ(randomGraph(42).name(), "rg42"); }

TEST(RandomGraph, OptionsAreHonoured) {
  RandomGraphOptions opt;
  opt.maxElements = 1000;
  opt.allowHalf = true;
  bool sawHalf = false;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    Graph g = randomGraph(seed, opt);
    for (const Node &n : g.nodes()) {
      EXPECT_LE(n.shape.numel(), 1000 * 129) << "seed " << seed; // one dim may exceed the budget
      sawHalf |= n.dtype == DType::F16 || n.dtype == DType::BF16;
    }
  }
  EXPECT_TRUE(sawHalf);
  opt.allowHalf = false;
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    Graph g = randomGraph(seed, opt);
    for (const Node &n : g.nodes())
      ASSERT_FALSE(n.dtype == DType::F16 || n.dtype == DType::BF16) << "seed " << seed;
  }
}

TEST(RandomGraph, EveryGraphVerifiesAndRoundTrips) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Graph g = randomGraph(seed);
    ASSERT_NO_THROW(verifyGraph(g)) << "seed " << seed;
    std::string text = printGraph(g);
    std::vector<Graph> back;
    ASSERT_NO_THROW(back = parseGraphs(text)) << "seed " << seed << "\n" << text;
    ASSERT_EQ(back.size(), 1u);
    EXPECT_EQ(printGraph(back[0]), text) << "seed " << seed;
  }
}

TEST(RandomGraph, EveryGraphCompilesFusedAndUnfused) {
  ::unsetenv("MINIJIT_SCHEDULE");
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Graph g = randomGraph(seed);
    for (bool fusion : {true, false}) {
      CompiledGraph c;
      ASSERT_NO_THROW(c = compileGraph(g, cpuOnly(fusion)))
          << "seed " << seed << (fusion ? " fused" : " unfused") << "\n"
          << printGraph(g);
      ASSERT_EQ(c.detail->kernels.size(), c.detail->plan.kernels.size());
      ASSERT_EQ(c.program.kernels.size(), c.detail->plan.kernels.size());
      // Launch order: each kernel reads inputs or values stored before it.
      for (size_t k = 0; k < c.detail->plan.kernels.size(); ++k)
        for (ValueId r : c.detail->plan.kernels[k].reads) {
          if (c.graph.node(r).op != OpKind::Input) {
            ASSERT_LT(c.detail->plan.storedBy[r], static_cast<int>(k)) << "seed " << seed;
          }
        }
      for (size_t v = 0; v < c.graph.size(); ++v) {
        if (c.detail->plan.storedBy[v] >= 0) {
          ASSERT_FALSE(c.detail->plan.storeReason[v].empty()) << "seed " << seed;
        }
      }
    }
  }
}

TEST(RandomGraph, FusionNeverNeedsMoreKernels) {
  for (uint64_t seed = 1; seed <= 200; ++seed) {
    Graph g = randomGraph(seed);
    size_t fused = compileGraph(g, cpuOnly(true)).detail->plan.kernels.size();
    size_t eager = compileGraph(g, cpuOnly(false)).detail->plan.kernels.size();
    EXPECT_LE(fused, eager) << "seed " << seed;
  }
}

TEST(RandomGraph, SimplifiedGraphsComputeTheSameValues) {
  // A differential check of Simplify on the CPU reference.
  for (uint64_t seed = 1; seed <= 100; ++seed) {
    Graph g = randomGraph(seed);
    Graph s = simplifyGraph(g);
    std::vector<HostTensor> in = randomInputs(g, seed);
    BoundedOutputs want = evaluateWithBounds(g, in);
    std::vector<HostTensor> got = evaluate(s, in);
    ASSERT_EQ(want.values.size(), got.size());
    for (size_t i = 0; i < got.size(); ++i) {
      CompareResult r = compareTensors(got[i], want.values[i], toleranceFor(g, g.outputs()[i]),
                                       nullptr, &want.bounds[i]);
      EXPECT_TRUE(r.ok) << "seed " << seed << " output " << i << ": " << r.summary;
    }
  }
}

TEST(RandomGraph, CoversTheWideGenerator) {
  // Over 300 seeds (data movement on): every op the steps use, every dtype,
  // permutes of rank 2 to 5, reductions with keepdim both ways, reshapes
  // that split and merge, several outputs.
  std::set<OpKind> ops;
  std::set<DType> types;
  std::set<unsigned> permuteRanks;
  bool keep = false, drop = false, split = false, merge = false, manyOutputs = false;
  RandomGraphOptions opt;
  opt.dataMovement = true;
  for (uint64_t seed = 1; seed <= 300; ++seed) {
    Graph g = randomGraph(seed, opt);
    manyOutputs |= g.outputs().size() >= 3;
    for (const Node &n : g.nodes()) {
      ops.insert(n.op);
      types.insert(n.dtype);
      if (n.op == OpKind::Permute)
        permuteRanks.insert(n.shape.rank());
      if (n.cls() == OpClass::Reduce)
        (n.keepdim ? keep : drop) = true;
      if (n.op == OpKind::Reshape) {
        unsigned from = g.node(n.operands[0]).shape.rank();
        split |= n.shape.rank() > from;
        merge |= n.shape.rank() < from;
      }
    }
  }
  for (OpKind op : {OpKind::Tanh, OpKind::Sigmoid, OpKind::Sin, OpKind::Cos, OpKind::Erf,
                    OpKind::Exp, OpKind::Sqrt, OpKind::Rsqrt, OpKind::Div, OpKind::Maximum,
                    OpKind::Where, OpKind::And, OpKind::Floor, OpKind::Cast, OpKind::Sum,
                    OpKind::Max, OpKind::Min, OpKind::Mean, OpKind::Prod, OpKind::Permute,
                    OpKind::Reshape, OpKind::Broadcast, OpKind::Matmul, OpKind::Slice,
                    OpKind::Pad, OpKind::Concat, OpKind::Take, OpKind::TakeAlongAxis,
                    OpKind::Argmax, OpKind::Argmin, OpKind::Cumsum, OpKind::Cumprod, OpKind::Iota})
    EXPECT_TRUE(ops.count(op)) << std::string(opName(op));
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool})
    EXPECT_TRUE(types.count(t)) << std::string(dtypeName(t));
  for (unsigned r = 2; r <= 5; ++r)
    EXPECT_TRUE(permuteRanks.count(r)) << "permute of rank " << r;
  EXPECT_TRUE(keep && drop && split && merge && manyOutputs);
}
