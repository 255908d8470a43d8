//===- tests/unit/EmptyCompileTest.cpp - empty tensors through the compiler ===//
// Values of no elements launch no kernel (issue 42): simplify makes them,
// and what empty operands alone compute, `full` literals
// (compiler/simplify/EmptyValues.h); fusion gives an empty value no kernel;
// the Program keeps a buffer of 0 bytes for an empty output; `--emit=fused`
// says why. And the runtime's checks that need no driver: DLPack takes a
// zero-element tensor with a null data pointer.
//===----------------------------------------------------------------------===//
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/simplify/EmptyValues.h"
#include "compiler/simplify/Simplify.h"
#include "ir/Bind.h"
#include "ir/Builder.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "runtime/DLPack.h"
#include "tools/Harness.h"

#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <string>

using namespace minijit;

namespace {

Graph parse(const std::string &text) { return parseGraphs(text, "t.mj").at(0); }

CompiledGraph lower(const Graph &g, bool fusion = true) {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.fusion = fusion;
  opt.compileKernels = false;
  return compileGraph(g, opt);
}

bool contains(const std::string &s, const std::string &part) {
  return s.find(part) != std::string::npos;
}

/// No kernel of `c` reads or writes a value of no elements.
void expectNoKernelTouchesAnEmptyValue(const CompiledGraph &c) {
  for (const KernelGroup &k : c.detail->plan.kernels) {
    EXPECT_FALSE(k.domain.isEmpty()) << c.fusedText();
    for (ValueId v : k.held)
      EXPECT_FALSE(c.graph.node(v).shape.isEmpty()) << "%" << c.graph.node(v).name;
    for (ValueId v : k.reads)
      EXPECT_FALSE(c.graph.node(v).shape.isEmpty()) << "%" << c.graph.node(v).name;
  }
  for (const ProgramKernel &pk : c.program.kernels)
    EXPECT_GT(pk.grid, 0) << pk.name;
}

} // namespace

TEST(EmptyValues, AGraphWithoutEmptyValuesIsLeftAlone) {
  Graph g = parse("graph g(%x: f32[4, 8]) {\n  %y = exp %x\n  return %y\n}\n");
  EXPECT_FALSE(replaceEmptyValues(g).has_value());
}

TEST(EmptyValues, EmptyValuesBecomeFullsAndIdentitiesReplaceReductionsOfNothing) {
  Graph g = parse("graph g(%x: f32[0, 17], %w: f32[17, 5], %a: f32[13, 0], %b: f32[0, 5]) {\n"
                  "  %e = exp %x\n"
                  "  %s = sum %e axes=[0]\n"
                  "  %p = prod %x axes=[0]\n"
                  "  %m = mean %x axes=[0]\n"
                  "  %k = matmul %a, %b\n"
                  "  %pd = pad %x before=[2, 0] after=[0, 0] value=7\n"
                  "  %c = concat %x, %pd axis=0\n"
                  "  return %e, %s, %p, %m, %k, %c\n"
                  "}\n");
  std::optional<Graph> r = replaceEmptyValues(g);
  ASSERT_TRUE(r.has_value());
  std::string text = printGraph(*r);
  EXPECT_TRUE(contains(text, "%e = full shape=[0, 17] value=0 dtype=f32 : f32[0, 17]")) << text;
  EXPECT_TRUE(contains(text, "%s = full shape=[17] value=0 dtype=f32 : f32[17]")) << text;
  EXPECT_TRUE(contains(text, "%p = full shape=[17] value=1 dtype=f32 : f32[17]")) << text;
  EXPECT_TRUE(contains(text, "%m = full shape=[17] value=nan dtype=f32 : f32[17]")) << text;
  EXPECT_TRUE(contains(text, "%k = full shape=[13, 5] value=0 dtype=f32 : f32[13, 5]")) << text;
  EXPECT_TRUE(contains(text, "%pd = full shape=[2, 17] value=7 dtype=f32 : f32[2, 17]")) << text;
  EXPECT_FALSE(contains(text, "concat")) << "the concat of an empty tensor and %pd is %pd\n"
                                         << text;
  EXPECT_FALSE(contains(text, "matmul")) << text;
}

TEST(EmptyValues, AnEmptyBatchCompilesToNoKernel) {
  Graph g = parse("graph mlp(%x: f32[B, 17], %w: f32[17, 13], %b: f32[13]) {\n"
                  "  %h = matmul %x, %w\n"
                  "  %a = add %h, %b\n"
                  "  %y = relu %a\n"
                  "  %n = sum %y axes=[1] keepdim=true\n"
                  "  %z = div %y, %n\n"
                  "  return %z\n"
                  "}\n");
  for (bool fusion : {true, false}) {
    CompiledGraph c = lower(bindDims(g, {{"B", 0}}), fusion);
    EXPECT_EQ(c.numKernels(), 0u) << c.fusedText();
    const Program &p = c.program;
    ASSERT_EQ(p.outputs.size(), 1u);
    const ProgramBuffer &out = p.buffers[p.outputs[0]];
    EXPECT_EQ(out.role, ProgramBuffer::Role::Output);
    EXPECT_EQ(out.bytes(), 0);
    EXPECT_EQ(out.shape.boundStr(), "[B=0, 13]");
    std::string fused = c.fusedText();
    EXPECT_TRUE(contains(fused, "graph mlp: 0 kernels")) << fused;
    EXPECT_TRUE(contains(fused, "no kernel: %z f32[B, 13] (graph output)\n"
                                "  empty: [B=0, 13] has no elements; its buffer has 0 bytes"))
        << fused;
  }
  // The same graph with rows compiles as before: kernels, no empty buffer.
  CompiledGraph c = lower(bindDims(g, {{"B", 3}}));
  EXPECT_GT(c.numKernels(), 0u);
}

TEST(EmptyValues, ASumOverAnEmptyAxisIsAKernelWritingZeros) {
  Graph g = parse("graph g(%x: f32[0, 17], %y: f32[17]) {\n"
                  "  %s = sum %x axes=[0]\n"
                  "  %t = add %s, %y\n"
                  "  %e = exp %x\n"
                  "  return %t, %e\n"
                  "}\n");
  CompiledGraph c = lower(g);
  expectNoKernelTouchesAnEmptyValue(c);
  ASSERT_EQ(c.numKernels(), 1u) << c.fusedText();
  const KernelGroup &k = c.detail->plan.kernels[0];
  EXPECT_EQ(k.domain, (Shape{17}));
  ASSERT_EQ(k.reads.size(), 1u) << "reads %y alone, never the empty %x";
  EXPECT_EQ(c.graph.node(k.reads[0]).name, "y");
  EXPECT_EQ(c.program.buffers[c.program.outputs[1]].bytes(), 0);
  EXPECT_TRUE(contains(c.fusedText(), "no kernel: %e f32[0, 17] (graph output)"));
}

TEST(EmptyValues, AMatmulWithKZeroReadsNothing) {
  Graph g = parse("graph g(%a: f32[13, 0], %b: f32[0, 17], %c: f32[13, 17]) {\n"
                  "  %k = matmul %a, %b\n"
                  "  %y = add %k, %c\n"
                  "  return %y\n"
                  "}\n");
  for (bool fusion : {true, false}) {
    CompiledGraph c = lower(g, fusion);
    expectNoKernelTouchesAnEmptyValue(c);
    // (with fusion off the zeros are a kernel of their own, as an iota is)
    EXPECT_EQ(c.numKernels(), fusion ? 1u : 2u) << c.fusedText();
    for (const KernelGroup &k : c.detail->plan.kernels)
      EXPECT_NE(k.kind, KernelKind::Matmul);
  }
}

TEST(EmptyValues, AnEmptyArgumentReturnedAndUpdatedInPlaceHasNoKernel) {
  Graph g = parse("graph g(%x: f32[0, 4], %w: f32[13, 0]) {\n"
                  "  %v = mul %w, 2\n"
                  "  return %x, %v -> %w\n"
                  "}\n");
  CompiledGraph c = lower(g);
  EXPECT_EQ(c.numKernels(), 0u);
  const Program &p = c.program;
  ASSERT_EQ(p.outputs.size(), 2u);
  for (int o : p.outputs) {
    EXPECT_GE(o, 0);
    EXPECT_EQ(p.buffers[o].bytes(), 0);
    EXPECT_EQ(p.buffers[o].role, ProgramBuffer::Role::Output);
  }
  EXPECT_EQ(p.updates[1], 1) << "the update of %w stays (it copies 0 bytes)";
  EXPECT_TRUE(contains(c.fusedText(), "no kernel: %x f32[0, 4] (graph output, an argument)"));
}

TEST(EmptyValues, NonEmptyGraphsKeepTheirSimplifiedForm) {
  Graph g = parse("graph g(%x: f32[40, 8]) {\n"
                  "  %s = sum %x axes=[0]\n"
                  "  %m = max %x axes=[1]\n"
                  "  return %s, %m\n"
                  "}\n");
  EXPECT_EQ(printGraph(simplifyGraph(g)), printGraph(g));
}

TEST(EmptyValues, TrainingOnAnEmptyBatchCompilesToKernelsOfZerosOnly) {
  Graph g("train");
  Tensor x = g.input("x", DType::F32, {0, 17});
  Tensor w = g.input("w", DType::F32, {17, 5});
  Tensor loss = sum(tanh(matmul(x, w)));
  g.output(loss, "loss");
  g.output(grad(loss, w), "dw");
  CompiledGraph c = lower(g);
  expectNoKernelTouchesAnEmptyValue(c);
  for (const KernelGroup &k : c.detail->plan.kernels)
    EXPECT_TRUE(k.reads.empty()) << "zeros need no input\n" << c.fusedText();
}

// What the GPU tests (tests/gpu/EmptyTest.cpp) check, with the compiled
// graph's CPU reference standing in for the device: the graph as simplified
// (the fulls in place of values of empty operands) gives the original's
// outputs, judged as a GPU run is (tolerances, error bounds, NaN where NaN).
TEST(EmptyValues, TheSimplifiedGraphComputesWhatTheGraphDoes) {
  Graph g = parse("graph mm(%a: f32[13, 0], %b: f32[0, 17], %c: f32[13, 17], %e: f32[0, 5],\n"
                  "         %x: f32[5, 5], %w: f16[3, 0, 8], %v: f16[3, 8, 0],\n"
                  "         %h: f16[0, 1025]) {\n"
                  "  %k = matmul %a, %b\n"
                  "  %y = add %k, %c\n"
                  "  %m = matmul %e, %x\n"
                  "  %bk = matmul %v, %w\n"
                  "  %p = pad %e before=[1, 0] after=[2, 3] value=1.5\n"
                  "  %j = concat %e, %x, %e axis=0\n"
                  "  %n = relu %j\n"
                  "  %mh = mean %h axes=[0]\n"
                  "  %ph = prod %h axes=[0] keepdim=true\n"
                  "  %s = sum %e\n"
                  "  return %y, %m, %bk, %p, %n, %mh, %ph, %s\n"
                  "}\n");
  Graph train("train");
  Tensor x = train.input("x", DType::F32, {0, 17});
  Tensor w = train.input("w", DType::F32, {17, 5});
  Tensor loss = mean(tanh(matmul(x, w)));
  train.output(loss, "loss");
  train.output(grad(loss, w), "dw");
  for (const Graph *graph : {&g, &train})
    for (bool fusion : {true, false}) {
      CompiledGraph c = lower(*graph, fusion);
      std::vector<HostTensor> ins = randomInputs(*graph, 5);
      ReferenceOutputs ref = referenceOutputs(*graph, c, ins);
      CheckedRun r;
      r.outputs = evaluate(c.graph, ins);
      compareWithReference(ref, r);
      for (size_t i = 0; i < r.compare.size(); ++i)
        EXPECT_TRUE(r.compare[i].ok) << graph->name() << " output " << i << ": "
                                     << r.compare[i].summary << "\n" << printGraph(c.graph);
    }
}

TEST(EmptyValues, DLPackTakesAZeroElementTensorWithANullPointer) {
  std::vector<int64_t> shape{0, 17}, strides{0, 0};
  DLTensor t = {};
  t.data = nullptr; // a zero-element torch tensor's data_ptr
  t.device = {kDLCUDA, 0};
  t.ndim = 2;
  t.dtype = {kDLFloat, 32, 1};
  t.shape = shape.data();
  t.strides = strides.data(); // not row-major: no element, no matter
  DLTensorInfo info = checkDLTensor(t, 0);
  EXPECT_EQ(info.shape, (Shape{0, 17}));
  EXPECT_EQ(info.data, 0u);
  t.byte_offset = 4;
  t.data = reinterpret_cast<void *>(uintptr_t(0x1000));
  EXPECT_EQ(checkDLTensor(t, 0).data, 0x1004u) << "unaligned is fine too: nothing is read";
  shape = {1, 17};
  t.data = nullptr;
  t.strides = nullptr;
  EXPECT_EQ(graphErrorOf([&] { checkDLTensor(t, 0); }), "dlpack: the data pointer is null")
      << "a tensor with elements still needs its memory";
}
