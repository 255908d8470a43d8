// The inputs of issue 42 that crashed, hung or were silently accepted: host
// tensors beyond the host's memory, out-of-range elements, tensors from user
// data, graphs with no outputs, literals that underflow f32, grads whose
// expansion passes the depth limit, and kernels too large for NVRTC to
// compile quickly. The command-line cases are in tests/crash (the corpus).
#include "compiler/fusion/CodeWeight.h"
#include "compiler/lower/FuseAndLower.h"
#include "ir/Autodiff.h"
#include "ir/Bind.h"
#include "ir/Error.h"
#include "ir/Evaluator.h"
#include "ir/Limits.h"
#include "ir/Npy.h"
#include "ir/Parser.h"

#include "llvm/Support/FileSystem.h"

#include <gtest/gtest.h>

#include <cmath>
#include <set>
#include <string>
#include <vector>

using namespace minijit;

namespace {

/// A graph of one input %x0: f32[SHAPE] and `n` statements `%xI = OP %xI-1`.
std::string chain(const std::string &op, int n, const std::string &shape = "16") {
  std::string t = "graph g(%x0: f32[" + shape + "]) {\n";
  for (int i = 1; i <= n; ++i)
    t += "  %x" + std::to_string(i) + " = " + op + " %x" + std::to_string(i - 1) + "\n";
  return t;
}

Graph parseOne(const std::string &text) { return std::move(parseGraphs(text, "t.mj").at(0)); }

template <typename E, typename Fn> std::string messageOf(Fn &&fn) {
  try {
    fn();
  } catch (const E &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "another exception: " << e.what();
    return "";
  }
  ADD_FAILURE() << "nothing was thrown";
  return "";
}

TEST(HardeningTest, HostTensorIndexOutOfRangeIsAnError) {
  HostTensor t(DType::F32, Shape({2, 3}));
  t.set(5, 1.5);
  EXPECT_EQ(t.get(5), 1.5);
  std::string m = messageOf<GraphError>([&] { t.get(6); });
  EXPECT_NE(m.find("element 6 of a host tensor f32[2, 3]: the index must be in [0, 6)"),
            std::string::npos)
      << m;
  messageOf<GraphError>([&] { t.get(-1); });
  messageOf<GraphError>([&] { t.set(1 << 30, 0); });
  HostTensor empty;
  messageOf<GraphError>([&] { empty.get(0); });
}

TEST(HardeningTest, HostTensorFromUserData) {
  std::vector<float> xs = {1, 2.5f, -3, 4, 5, 6};
  HostTensor t = HostTensor::fromData(Shape({2, 3}), std::span<const float>(xs));
  EXPECT_EQ(t.dtype(), DType::F32);
  EXPECT_EQ(t.shape(), Shape({2, 3}));
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(t.get(i), xs[i]);
  std::vector<int32_t> is = {7, -8, 9};
  HostTensor u = HostTensor::fromData(Shape({3}), std::span<const int32_t>(is));
  EXPECT_EQ(u.dtype(), DType::I32);
  EXPECT_EQ(u.get(1), -8);
  std::string m = messageOf<GraphError>(
      [&] { HostTensor::fromData(Shape({4}), std::span<const float>(xs)); });
  EXPECT_NE(m.find("a host tensor f32[4] holds 16 bytes, got 24"), std::string::npos) << m;

  llvm::SmallString<128> dir;
  ASSERT_FALSE(llvm::sys::fs::createUniqueDirectory("minijit-hardening", dir));
  std::string path = std::string(dir) + "/t.npy";
  writeNpy(path, t);
  HostTensor back = HostTensor::fromNpy(path);
  EXPECT_EQ(back.shape(), t.shape());
  for (int i = 0; i < 6; ++i)
    EXPECT_EQ(back.get(i), xs[i]);
  llvm::sys::fs::remove_directories(dir);
  messageOf<GraphError>([&] { HostTensor::fromNpy("/nonexistent/t.npy"); });
}

TEST(HardeningTest, HostTensorBeyondTheHostIsAResourceError) {
  // 2^40 f32 elements: 4 TiB, more than any host here; before, std::bad_alloc.
  std::string m =
      messageOf<ResourceError>([] { HostTensor(DType::F32, Shape({int64_t(1) << 40})); });
  EXPECT_NE(m.find("needs 4398046511104 bytes"), std::string::npos) << m;
  // Dimensions whose product overflows int64.
  messageOf<ResourceError>(
      [] { HostTensor(DType::F32, Shape({int64_t(1) << 40, int64_t(1) << 40})); });
  EXPECT_GT(maxHostTensorBytes(), int64_t(1) << 20);
}

TEST(HardeningTest, EvaluatorChecksSizesBeforeAllocating) {
  Graph g = parseOne("graph g() {\n  %y = iota shape=[1048576, 1048576] axis=0 dtype=f32\n"
                     "  return %y\n}\n");
  std::string m = messageOf<ResourceError>([&] { evaluate(g, {}); });
  EXPECT_NE(m.find("%y (f32[1048576, 1048576]): 4398046511104 bytes"), std::string::npos) << m;
  Graph p = parseOne("graph p(%x: f32[4]) {\n  %y = pad %x before=[0] after=[1099511627770]\n"
                     "  return %y\n}\n");
  std::vector<HostTensor> in = {HostTensor(DType::F32, Shape({4}))};
  messageOf<ResourceError>([&] { evaluate(p, in); });
}

TEST(HardeningTest, EvaluateRefusesAGraphWithNoOutputs) {
  Graph g("none");
  g.input("x", DType::F32, Shape({4}));
  std::vector<HostTensor> in = {HostTensor(DType::F32, Shape({4}))};
  EXPECT_EQ(messageOf<GraphError>([&] { evaluate(g, in); }), "graph 'none' has no outputs");
}

TEST(HardeningTest, RandomInputsSkipsTheInputsGiven) {
  Graph g = parseOne("graph g(%a: f32[3], %b: f32[1048576, 1048576]) {\n  %y = neg %a\n"
                     "  return %y\n}\n");
  std::vector<bool> skip = {false, true};
  std::vector<HostTensor> ins = randomInputs(g, 7, &skip);
  ASSERT_EQ(ins.size(), 2u);
  EXPECT_EQ(ins[0].numel(), 3);
  EXPECT_EQ(ins[1].bytes(), 0u);
  EXPECT_EQ(ins[0].get(2), randomInputs(parseOne("graph g(%a: f32[3]) {\n  %y = neg %a\n"
                                                 "  return %y\n}\n"),
                                        7)[0]
                               .get(2));
}

TEST(HardeningTest, LiteralsThatUnderflowF32AreErrors) {
  auto text = [](const std::string &lit) {
    return "graph g(%x: f32[4]) {\n  %y = add %x, " + lit + "\n  return %y\n}\n";
  };
  for (const char *bad : {"1e-50", "-1e-50", "1e-46"}) {
    std::string m = messageOf<ParseError>([&] { parseGraphs(text(bad), "t.mj"); });
    EXPECT_NE(m.find("t.mj:2:16: error: literal " + std::string(bad) + " underflows f32"),
              std::string::npos)
        << m;
  }
  for (const char *good : {"0", "0.0", "-0.0", "1e-45", "1.2e-38", "1e-40"})
    EXPECT_NO_THROW(parseGraphs(text(good), "t.mj")) << good;
  // The pad value is a literal too.
  messageOf<ParseError>([] {
    parseGraphs("graph g(%x: f32[4]) {\n  %y = pad %x before=[1] after=[0] value=1e-60\n"
                "  return %y\n}\n",
                "t.mj");
  });
}

TEST(HardeningTest, GradWhoseExpansionIsTooDeepIsAnErrorAtTheGrad) {
  // 600 tanh verify (depth 600); the backward sweep about doubles the depth.
  std::string t = chain("tanh", 600) + "  %l = sum %x600 axes=[0]\n  %dx = grad %l, %x0\n" +
                  "  return %dx\n}\n";
  std::string m = messageOf<ParseError>([&] { parseGraphs(t, "t.mj"); });
  EXPECT_NE(m.find("t.mj:603:9: error: grad %dx: its expansion passes a limit of the graph: "),
            std::string::npos)
      << m;
  EXPECT_NE(m.find("a graph may be at most 1024 ops deep"), std::string::npos) << m;

  // With a named dimension the expansion waits for the size; it then names the grad.
  std::string named = chain("tanh", 600, "B") +
                      "  %l = sum %x600 axes=[0]\n  %dx = grad %l, %x0\n  return %dx\n}\n";
  Graph g = parseOne(named);
  Graph bound = bindDims(g, {{"B", 4}});
  try {
    expandAutodiff(bound);
    ADD_FAILURE() << "no ExpansionError";
  } catch (const ExpansionError &e) {
    EXPECT_EQ(bound.node(e.derivative()).name, "dx");
    EXPECT_NE(std::string(e.what()).find("grad %dx: "), std::string::npos) << e.what();
  }

  // A shorter chain expands and evaluates.
  std::string ok = chain("tanh", 300) + "  %l = sum %x300 axes=[0]\n  %dx = grad %l, %x0\n" +
                   "  return %dx\n}\n";
  Graph small = parseOne(ok);
  std::vector<HostTensor> outs = evaluate(small, randomInputs(small, 1));
  EXPECT_EQ(outs.at(0).numel(), 16);
}

/// The code weight of each kernel of `plan`.
std::vector<int64_t> kernelWeights(const Graph &g, const FusionPlan &plan) {
  std::vector<int64_t> ws;
  for (const KernelGroup &k : plan.kernels) {
    int64_t w = 0;
    for (ValueId v : k.held)
      w += codeWeight(g.node(v).op);
    ws.push_back(w);
  }
  return ws;
}

TEST(HardeningTest, FusionSplitsAKernelTooLargeForNvrtc) {
  // kMaxKernelWeight / 256 = 16 sin fit one kernel; 40 take three.
  ASSERT_EQ(codeWeight(OpKind::Sin) * 16, kMaxKernelWeight);
  Graph fits = parseOne(chain("sin", 16) + "  return %x16\n}\n");
  EXPECT_EQ(fuseGraph(fits, true).kernels.size(), 1u);

  Graph g = parseOne(chain("sin", 40) + "  return %x40\n}\n");
  FusedGraph f = fuseAndLower(g, true);
  ASSERT_EQ(f.plan.kernels.size(), 3u);
  for (int64_t w : kernelWeights(g, f.plan))
    EXPECT_LE(w, kMaxKernelWeight);
  ValueId x16 = *g.lookup("x16");
  EXPECT_EQ(f.plan.storeReason[x16].kind, FusionReasonKind::KernelTooLarge);
  std::string why = describeReason(g, f.plan.storeReason[x16]);
  EXPECT_NE(why.find("%x16 is stored to split a kernel"), std::string::npos) << why;
  std::string text;
  llvm::raw_string_ostream os(text);
  printFusionPlan(os, g, f.plan);
  EXPECT_NE(os.str().find("more than the 4096 one kernel may"), std::string::npos);

  // Diamonds: exp and sin of one value, added; every kernel within the limit.
  std::string d = "graph d(%x0: f32[16]) {\n";
  for (int i = 0; i < 60; ++i) {
    std::string x = "%x" + std::to_string(i), s = std::to_string(i);
    d += "  %a" + s + " = exp " + x + "\n  %b" + s + " = sin " + x + "\n  %x" +
         std::to_string(i + 1) + " = add %a" + s + ", %b" + s + "\n";
  }
  Graph dg = parseOne(d + "  return %x60\n}\n");
  FusedGraph df = fuseAndLower(dg, true);
  EXPECT_GT(df.plan.kernels.size(), 3u);
  for (int64_t w : kernelWeights(dg, df.plan))
    EXPECT_LE(w, kMaxKernelWeight);

  // Many cheap ops stay in one kernel: 1000 adds weigh 1000.
  Graph adds = parseOne(chain("neg", 1000) + "  return %x1000\n}\n");
  EXPECT_EQ(fuseGraph(adds, true).kernels.size(), 1u);
}

} // namespace
