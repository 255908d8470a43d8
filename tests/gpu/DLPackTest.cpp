//===- tests/gpu/DLPackTest.cpp - DLPack exchange on the GPU ---------------===//
// Exported tensors re-imported without a copy, compiled graphs reading and
// writing memory of another owner, and that owner's deleter run exactly once.
// The PyTorch side is tests/gpu/dlpack_torch.py.
#include "tests/gpu/GpuTest.h"
#include "tests/support/Expect.h"

namespace minijit {
namespace {

class DLPack : public GpuTest {};

Graph geluGraph(int64_t n, DType dtype) {
  Graph g("gelu");
  Tensor x = g.input("x", dtype, {n});
  g.output(0.5 * x * (1.0 + tanh(0.7978845608 * (x + 0.044715 * x * x * x))), "y");
  return g;
}

/// Another framework's tensor, as far as minijit can tell: memory the
/// "framework" holds, handed over as a DLManagedTensor whose deleter counts.
struct ForeignTensor {
  DeviceTensor memory; ///< what the framework keeps alive until the deleter
  int64_t shape[kMaxRank] = {};
  DLManagedTensor managed = {};
  int deleted = 0;

  ForeignTensor(const Device &dev, const HostTensor &h) : memory(DeviceTensor::fromHost(dev, h)) {
    for (unsigned i = 0; i < h.shape().rank(); ++i)
      shape[i] = h.shape()[i];
    DLTensor &t = managed.dl_tensor;
    t.data = reinterpret_cast<void *>(memory.data());
    t.device = {kDLCUDA, dev.ordinal()};
    t.ndim = static_cast<int>(h.shape().rank());
    t.dtype = toDLDataType(h.dtype());
    t.shape = shape;
    managed.manager_ctx = this;
    managed.deleter = [](DLManagedTensor *m) {
      auto *self = static_cast<ForeignTensor *>(m->manager_ctx);
      ++self->deleted;
      self->memory = DeviceTensor(); // the framework frees its memory
    };
  }
};

TEST_F(DLPack, TheGeluGraphsOfThePyTorchRoundTripWork) {
  // Without a GPU this compiles them: dlpack_torch.py runs them from PyTorch.
  expectMatches(geluGraph(1025, DType::F32));
  expectMatches(geluGraph(1025, DType::F16));
}

TEST_F(DLPack, AnExportedTensorDescribesItsMemory) {
  MJ_REQUIRE_GPU();
  DeviceTensor a = DeviceTensor::fromHost(gpu(), HostTensor::random(DType::BF16, {3, 5, 7}, 1));
  DLManagedTensor *m = toDLPack(a);
  const DLTensor &t = m->dl_tensor;
  EXPECT_EQ(reinterpret_cast<CUdeviceptr>(t.data), a.data());
  EXPECT_EQ(t.device.device_type, kDLCUDA);
  EXPECT_EQ(t.device.device_id, gpu().ordinal());
  EXPECT_EQ(t.dtype.code, kDLBfloat);
  EXPECT_EQ(t.dtype.bits, 16);
  EXPECT_EQ(t.dtype.lanes, 1);
  ASSERT_EQ(t.ndim, 3);
  EXPECT_EQ(std::vector<int64_t>(t.shape, t.shape + 3), (std::vector<int64_t>{3, 5, 7}));
  EXPECT_EQ(std::vector<int64_t>(t.strides, t.strides + 3), (std::vector<int64_t>{35, 7, 1}));
  EXPECT_EQ(t.byte_offset, 0u);
  m->deleter(m);
}

TEST_F(DLPack, ExportThenImportSharesTheMemory) {
  MJ_REQUIRE_GPU();
  size_t before = gpu().allocator().stats().bytesInUse;
  HostTensor h = HostTensor::random(DType::F32, {1025}, 2);
  {
    DeviceTensor back;
    {
      DeviceTensor a = DeviceTensor::fromHost(gpu(), h);
      back = fromDLPack(gpu(), toDLPack(a));
      EXPECT_EQ(back.data(), a.data());
      EXPECT_EQ(back.dtype(), DType::F32);
      EXPECT_EQ(back.shape(), Shape({1025}));
    }
    // The export holds the memory after the tensor it came from is gone.
    EXPECT_GT(gpu().allocator().stats().bytesInUse, before);
    CompareResult c = compareTensors(back.download(), h, Tolerance{0});
    EXPECT_TRUE(c.ok) << c.summary;
  }
  // Dropping the import ran the export's deleter, which gave the memory back.
  EXPECT_EQ(gpu().allocator().stats().bytesInUse, before);
}

TEST_F(DLPack, AGraphRunsOnAWrappedInputAndOutput) {
  MJ_REQUIRE_GPU();
  for (DType dtype : {DType::F32, DType::F16}) {
    Graph g = geluGraph(1025, dtype);
    Executable exe = compile(g, gpu());
    HostTensor in = HostTensor::random(dtype, {1025}, 3);
    HostTensor poison(dtype, {1025});
    poison.poison();
    ForeignTensor x(gpu(), in), y(gpu(), poison);
    {
      DeviceTensor wx = fromDLPack(gpu(), &x.managed);
      DeviceTensor wy = fromDLPack(gpu(), &y.managed);
      EXPECT_EQ(wx.data(), x.memory.data());
      exe.enqueue({wx}, {wy}); // reads and writes the framework's memory in place
      exe.synchronize();
      std::vector<DeviceTensor> fresh = exe.run({wx}); // and allocates an output
      HostTensor ref = evaluate(g, {in})[0];
      Tolerance tol = toleranceFor(g, g.outputs()[0]);
      CompareResult c = compareTensors(y.memory.download(), ref, tol);
      EXPECT_TRUE(c.ok) << std::string(dtypeName(dtype)) << ": " << c.summary;
      c = compareTensors(fresh[0].download(), ref, tol);
      EXPECT_TRUE(c.ok) << std::string(dtypeName(dtype)) << ": " << c.summary;
      EXPECT_EQ(x.deleted + y.deleted, 0);
    }
    EXPECT_EQ(x.deleted, 1);
    EXPECT_EQ(y.deleted, 1);
  }
}

TEST_F(DLPack, TheDeleterRunsOnceAfterTheLastCopy) {
  MJ_REQUIRE_GPU();
  ForeignTensor f(gpu(), HostTensor::random(DType::I32, {4, 8}, 4));
  std::vector<DeviceTensor> copies;
  {
    DeviceTensor t = fromDLPack(gpu(), &f.managed);
    copies.assign(3, t);
  }
  EXPECT_EQ(f.deleted, 0);
  copies.pop_back();
  copies.pop_back();
  EXPECT_EQ(f.deleted, 0);
  copies.clear();
  EXPECT_EQ(f.deleted, 1);
}

TEST_F(DLPack, ARefusedTensorStaysWithItsOwner) {
  MJ_REQUIRE_GPU();
  ForeignTensor f(gpu(), HostTensor::random(DType::F32, {16}, 5));
  f.managed.dl_tensor.device.device_id = gpu().ordinal() + 1;
  EXPECT_NE(graphErrorOf([&] { fromDLPack(gpu(), &f.managed); }).find("the minijit device is"),
            std::string::npos);
  f.managed.dl_tensor.device.device_id = gpu().ordinal();
  f.managed.dl_tensor.byte_offset = 4;
  EXPECT_NE(graphErrorOf([&] { fromDLPack(gpu(), &f.managed); }).find("not 16-byte aligned"),
            std::string::npos);
  EXPECT_EQ(f.deleted, 0);
}

} // namespace
} // namespace minijit
