// Empty tensors on the GPU (issue 42): graphs whose inputs have a dimension
// of 0 run fused and unfused against the CPU reference with outputs poisoned
// first, so the outputs that have elements (a sum over the empty batch is
// zeros, a mean NaN, a matmul with K = 0 zeros) must be written by a kernel
// while nothing runs over the empty ones; a named batch bound to 0 between
// other sizes in one executable; device tensors of no element.
#include "tests/gpu/GpuTest.h"

#include "ir/Bind.h"

namespace minijit {
namespace {

class Empty : public GpuTest {};

TEST_F(Empty, ElementwiseAndViewsOfEmptyTensorsAtOddSizes) {
  Graph g = parseGraphs("graph odd(%x: f32[0, 17], %y: f16[13, 0], %r: f16[1, 0]) {\n"
                        "  %a = tanh %x\n"
                        "  %b = add %y, %r\n"
                        "  %c = cast %b to=f32\n"
                        "  %t = permute %c perm=[1, 0]\n"
                        "  %s = slice %a axis=1 start=3 end=3\n"
                        "  %f = flip %x axes=[1]\n"
                        "  return %a, %t, %s, %f, %x\n"
                        "}\n",
                        "odd.mj")
                .at(0);
  expectMatches(g);
}

TEST_F(Empty, ReductionsOverAnEmptyAxisWriteTheirIdentity) {
  Graph g = parseGraphs("graph ident(%x: f32[0, 17], %i: i32[13, 0], %h: f16[0, 1025]) {\n"
                        "  %e = exp %x\n"
                        "  %s = sum %e axes=[0]\n"
                        "  %p = prod %x axes=[0] keepdim=true\n"
                        "  %m = mean %x axes=[0]\n"
                        "  %si = sum %i axes=[1]\n"
                        "  %pi = prod %i axes=[1]\n"
                        "  %mh = mean %h axes=[0]\n"
                        "  %all = sum %x\n"
                        "  %rows = sum %x axes=[1]\n"
                        "  %am = argmax %x axis=1\n"
                        "  %c = cumsum %x axis=0\n"
                        "  return %s, %p, %m, %si, %pi, %mh, %all, %rows, %am, %c\n"
                        "}\n",
                        "ident.mj")
                .at(0);
  expectMatches(g);
}

TEST_F(Empty, MatmulPadAndConcatBesideEmptyOperands) {
  Graph g = parseGraphs("graph mm(%a: f32[13, 0], %b: f32[0, 17], %c: f32[13, 17],\n"
                        "         %e: f32[0, 5], %x: f32[5, 5], %w: f16[3, 0, 8],\n"
                        "         %v: f16[3, 8, 0]) {\n"
                        "  %k = matmul %a, %b\n"
                        "  %y = add %k, %c\n"
                        "  %m = matmul %e, %x\n"
                        "  %bk = matmul %v, %w\n"
                        "  %p = pad %e before=[1, 0] after=[2, 3] value=1.5\n"
                        "  %j = concat %e, %x, %e axis=0\n"
                        "  %n = relu %j\n"
                        "  return %y, %m, %bk, %p, %n\n"
                        "}\n",
                        "mm.mj")
                .at(0);
  expectMatches(g);
}

TEST_F(Empty, TrainingOnAnEmptyBatchGivesZeroGradients) {
  Graph g("train_empty");
  Tensor x = g.input("x", DType::F32, {0, 17});
  Tensor w = g.input("w", DType::F32, {17, 5});
  Tensor b = g.input("b", DType::F32, {5});
  Tensor loss = sum(tanh(matmul(x, w) + b));
  g.output(loss, "loss");
  g.output(grad(loss, w), "dw");
  g.output(grad(loss, b), "db");
  g.output(grad(loss, x), "dx");
  expectMatches(g);
}

TEST_F(Empty, ANamedBatchBoundToZeroBetweenOtherSizes) {
  Graph g("mlp_named_empty");
  Tensor x = g.input("x", DType::F32, {Dim("B"), 17});
  Tensor w = g.input("w", DType::F32, {17, 13});
  Tensor bias = g.input("b", DType::F32, {13});
  Tensor h = relu(matmul(x, w) + bias);
  g.output(softmax(h, -1), "y");
  g.output(sum(h, {0}), "col");
  if (!Gpu) {
    for (int64_t b : {0, 3, 0})
      EXPECT_NO_THROW(compileGraph(bindDims(g, {{"B", b}}))) << "B=" << b;
    GTEST_SKIP() << "no GPU (" << WhyNot << "): compiled through NVRTC, not run";
  }
  Executable exe = compile(g, gpu());
  for (int64_t b : {0, 3, 0, 1025, 0}) {
    Graph bound = bindDims(g, {{"B", b}});
    std::vector<HostTensor> ins = randomInputs(bound, 42 + static_cast<uint64_t>(b));
    std::vector<DeviceTensor> din;
    for (const HostTensor &t : ins)
      din.push_back(DeviceTensor::fromHost(gpu(), t));
    std::vector<DeviceTensor> dout = exe.allocateOutputs(din);
    poisonTensors(dout);
    exe.enqueue(din, dout);
    exe.synchronize();
    if (b == 0) {
      EXPECT_EQ(exe.program().kernels.size(), 1u) << "only the zeros of %col have elements";
    }
    std::vector<HostTensor> ref = evaluate(bound, ins);
    for (size_t i = 0; i < ref.size(); ++i) {
      CompareResult c = compareTensors(dout[i].download(), ref[i],
                                       toleranceFor(bound, bound.outputs()[i]));
      EXPECT_TRUE(c.ok) << "B=" << b << ", output " << i << ": " << c.summary;
    }
  }
}

TEST_F(Empty, DeviceTensorsOfNoElement) {
  MJ_REQUIRE_GPU();
  AllocatorStats before = gpu().allocator().stats();
  DeviceTensor t(gpu(), DType::F32, {0, 17});
  EXPECT_TRUE(t.valid());
  EXPECT_EQ(t.bytes(), 0u);
  EXPECT_EQ(t.data(), 0u) << "no memory for no element";
  EXPECT_EQ(gpu().allocator().stats().bytesInUse, before.bytesInUse);
  t.upload(HostTensor(DType::F32, {0, 17}));
  HostTensor back = t.download();
  EXPECT_EQ(back.shape(), (Shape{0, 17}));
  DLManagedTensor *m = toDLPack(t);
  DeviceTensor again = fromDLPack(gpu(), m); // null data: taken, as torch's empty tensors
  EXPECT_EQ(again.shape(), (Shape{0, 17}));
}

} // namespace
} // namespace minijit
