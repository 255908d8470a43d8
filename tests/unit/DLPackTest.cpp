// DLPack exchange without a driver: which DLTensors are taken, the message of
// each refusal, dtype mapping, and the release of wrapped foreign memory.
#include "runtime/DLPack.h"
#include "tests/support/Expect.h"

#include <gtest/gtest.h>

#include <vector>

using namespace minijit;

namespace {

constexpr uintptr_t kAddress = 0x7f0000000000; // never dereferenced

/// A DLTensor over `shape` (CUDA device 0, float32, null strides).
struct FakeTensor {
  std::vector<int64_t> shape, strides;
  DLTensor t = {};

  explicit FakeTensor(std::vector<int64_t> dims) : shape(std::move(dims)) {
    t.data = reinterpret_cast<void *>(kAddress);
    t.device = {kDLCUDA, 0};
    t.ndim = static_cast<int>(shape.size());
    t.dtype = {kDLFloat, 32, 1};
    t.shape = shape.data();
  }
  FakeTensor &withStrides(std::vector<int64_t> s) {
    strides = std::move(s);
    t.strides = strides.data();
    return *this;
  }
};

std::string refusal(const DLTensor &t, int ordinal = 0) {
  return graphErrorOf([&] { checkDLTensor(t, ordinal); });
}

} // namespace

TEST(DLPack, TakesEveryMinijitDType) {
  for (DType d : {DType::F32, DType::F16, DType::BF16, DType::I32, DType::Bool, DType::I64}) {
    FakeTensor f({4, 8});
    f.t.dtype = toDLDataType(d);
    EXPECT_EQ(checkDLTensor(f.t, 0).dtype, d) << std::string(dtypeName(d));
  }
}

TEST(DLPack, DTypesAreDescribedAsDLPackSpellsThem) {
  auto same = [](DLDataType a, DLDataType b) {
    return a.code == b.code && a.bits == b.bits && a.lanes == b.lanes;
  };
  EXPECT_TRUE(same(toDLDataType(DType::F32), {kDLFloat, 32, 1}));
  EXPECT_TRUE(same(toDLDataType(DType::F16), {kDLFloat, 16, 1}));
  EXPECT_TRUE(same(toDLDataType(DType::BF16), {kDLBfloat, 16, 1}));
  EXPECT_TRUE(same(toDLDataType(DType::I32), {kDLInt, 32, 1}));
  EXPECT_TRUE(same(toDLDataType(DType::Bool), {kDLPackBoolCode, 8, 1}));
  EXPECT_TRUE(same(toDLDataType(DType::I64), {kDLInt, 64, 1}));
}

TEST(DLPack, NullStridesAreRowMajor) {
  FakeTensor f({2, 3, 5});
  DLTensorInfo info = checkDLTensor(f.t, 0);
  EXPECT_EQ(info.shape, Shape({2, 3, 5}));
  EXPECT_EQ(info.dtype, DType::F32);
  EXPECT_EQ(info.data, kAddress);
}

TEST(DLPack, ExplicitRowMajorStridesAreTaken) {
  FakeTensor f({2, 3, 5});
  f.withStrides({15, 5, 1});
  EXPECT_EQ(checkDLTensor(f.t, 0).shape, Shape({2, 3, 5}));
}

TEST(DLPack, DimensionsOfSizeOneMayHaveAnyStride) {
  // PyTorch gives x[:, None] and unsqueezed dims strides that are not row-major.
  FakeTensor f({4, 1, 8, 1});
  f.withStrides({8, 1, 1, 12345});
  EXPECT_EQ(checkDLTensor(f.t, 0).shape, Shape({4, 1, 8, 1}));
}

TEST(DLPack, AScalarHasNoShapeArray) {
  FakeTensor f({});
  f.t.shape = nullptr;
  DLTensorInfo info = checkDLTensor(f.t, 0);
  EXPECT_EQ(info.shape.rank(), 0u);
}

TEST(DLPack, ByteOffsetIsAddedToTheAddress) {
  FakeTensor f({16});
  f.t.byte_offset = 256;
  EXPECT_EQ(checkDLTensor(f.t, 0).data, kAddress + 256);
}

TEST(DLPack, ManagedMemoryIsTakenWhateverItsDeviceId) {
  FakeTensor f({16});
  f.t.device = {kDLCUDAManaged, 0};
  EXPECT_EQ(checkDLTensor(f.t, 1).data, kAddress);
}

TEST(DLPack, TheDeviceOrdinalMustMatch) {
  FakeTensor f({16});
  f.t.device = {kDLCUDA, 1};
  EXPECT_EQ(checkDLTensor(f.t, 1).data, kAddress);
  EXPECT_EQ(refusal(f.t, 0), "dlpack: the tensor is on CUDA device 1, the minijit device is 0");
}

TEST(DLPack, CpuMemoryIsRefused) {
  FakeTensor f({16});
  f.t.device = {kDLCPU, 0};
  EXPECT_EQ(refusal(f.t), "dlpack: the tensor is in CPU memory (device type 1); minijit runs on "
                          "CUDA device memory");
}

TEST(DLPack, PinnedHostMemoryIsRefused) {
  FakeTensor f({16});
  f.t.device = {kDLCUDAHost, 0};
  EXPECT_EQ(refusal(f.t), "dlpack: the tensor is in pinned host memory (device type 3); minijit "
                          "runs on CUDA device memory");
}

TEST(DLPack, UnsupportedDTypesAreNamed) {
  FakeTensor f({16});
  f.t.dtype = {kDLFloat, 64, 1};
  EXPECT_EQ(refusal(f.t), "dlpack: dtype float64 is not supported (minijit has float32, float16, "
                          "bfloat16, int32, int64, bool)");
  f.t.dtype = {kDLInt, 16, 1};
  EXPECT_EQ(refusal(f.t), "dlpack: dtype int16 is not supported (minijit has float32, float16, "
                          "bfloat16, int32, int64, bool)");
  f.t.dtype = {kDLComplex, 64, 1};
  EXPECT_EQ(refusal(f.t), "dlpack: dtype complex64 is not supported (minijit has float32, "
                          "float16, bfloat16, int32, int64, bool)");
  f.t.dtype = {42, 8, 1};
  EXPECT_EQ(refusal(f.t), "dlpack: dtype code 42, 8 bits is not supported (minijit has float32, "
                          "float16, bfloat16, int32, int64, bool)");
}

TEST(DLPack, Uint8IsNotTakenAsBool) {
  FakeTensor f({16});
  f.t.dtype = {kDLUInt, 8, 1};
  EXPECT_EQ(refusal(f.t), "dlpack: dtype uint8 is not supported (minijit has float32, float16, "
                          "bfloat16, int32, int64, bool); uint8 is not taken as bool, whose bytes must "
                          "be 0 or 1");
}

TEST(DLPack, VectorDTypesAreRefused) {
  FakeTensor f({16});
  f.t.dtype = {kDLFloat, 32, 4};
  EXPECT_EQ(refusal(f.t), "dlpack: vector dtype float32x4 (4 lanes) is not supported; minijit "
                          "needs one lane per element");
}

TEST(DLPack, RankAboveTheMaximumIsRefused) {
  FakeTensor f(std::vector<int64_t>(kMaxRank + 1, 1));
  EXPECT_EQ(refusal(f.t), "dlpack: rank 9 exceeds minijit's maximum of 8");
  f.t.ndim = -1;
  EXPECT_EQ(refusal(f.t), "dlpack: rank -1 exceeds minijit's maximum of 8");
}

TEST(DLPack, EmptyDimensionsAreTakenAndNegativeOnesRefused) {
  FakeTensor f({4, 0});
  EXPECT_EQ(checkDLTensor(f.t, 0).shape, (Shape{4, 0}));
  FakeTensor n({4, -1});
  EXPECT_EQ(refusal(n.t), "dlpack: dimension 1 of [4, -1] is -1; dimensions must be at least 0");
}

TEST(DLPack, TooManyElementsAreRefused) {
  FakeTensor f({int64_t(1) << 21, int64_t(1) << 20});
  EXPECT_EQ(refusal(f.t), "dlpack: shape [2097152, 1048576] has more than 2^40 elements, the "
                          "largest tensor minijit accepts");
}

TEST(DLPack, ANullShapeIsRefused) {
  FakeTensor f({4});
  f.t.shape = nullptr;
  EXPECT_EQ(refusal(f.t), "dlpack: null shape for a tensor of rank 1");
}

TEST(DLPack, NonContiguousStridesAreRefused) {
  FakeTensor f({4, 8}); // a transposed [8, 4]
  f.withStrides({1, 4});
  EXPECT_EQ(refusal(f.t), "dlpack: strides [1, 4] of a [4, 8] tensor are not row-major (expected "
                          "[8, 1]); make it contiguous first (torch: .contiguous())");
  FakeTensor g({4, 8}); // every other column of a [4, 16]
  g.withStrides({16, 2});
  EXPECT_EQ(refusal(g.t), "dlpack: strides [16, 2] of a [4, 8] tensor are not row-major "
                          "(expected [8, 1]); make it contiguous first (torch: .contiguous())");
}

TEST(DLPack, ANullDataPointerIsRefused) {
  FakeTensor f({4});
  f.t.data = nullptr;
  EXPECT_EQ(refusal(f.t), "dlpack: the data pointer is null");
}

TEST(DLPack, MisalignedAddressesAreRefused) {
  FakeTensor f({15}); // x[1:] of a float32 tensor
  f.t.byte_offset = 4;
  EXPECT_EQ(refusal(f.t), "dlpack: the address 0x7f0000000004 (data 0x7f0000000000 + byte_offset "
                          "4) is not 16-byte aligned, as minijit's vector loads need; copy the "
                          "tensor first (torch: .clone())");
  f.t.byte_offset = 0;
  f.t.data = reinterpret_cast<void *>(kAddress + 8);
  EXPECT_NE(refusal(f.t).find("is not 16-byte aligned"), std::string::npos);
}

TEST(DLPack, WhereTheMemoryLivesIsCheckedFirst) {
  // A CPU float64 tensor is refused for where it lives, the first thing checked.
  FakeTensor f({4, 8});
  f.t.device = {kDLCPU, 0};
  f.t.dtype = {kDLFloat, 64, 1};
  EXPECT_NE(refusal(f.t).find("CPU memory"), std::string::npos);
}

TEST(DLPack, ANullManagedTensorIsRefused) {
  EXPECT_EQ(graphErrorOf([] { fromDLPack(Device(), nullptr); }),
            "dlpack: the DLManagedTensor is null");
}

TEST(DLPack, AnEmptyTensorCannotBeExported) {
  EXPECT_EQ(graphErrorOf([] { toDLPack(DeviceTensor()); }),
            "toDLPack: the tensor is empty (default-constructed)");
}

TEST(DeviceTensorWrap, ReleaseRunsOnceWhenTheLastCopyIsGone) {
  int released = 0;
  {
    DeviceTensor a =
        DeviceTensor::wrap(Device(), kAddress, DType::F16, {4, 8}, [&] { ++released; });
    EXPECT_EQ(a.data(), kAddress);
    EXPECT_EQ(a.bytes(), 64u);
    {
      DeviceTensor b = a;
      DeviceTensor c = b;
    }
    EXPECT_EQ(released, 0);
  }
  EXPECT_EQ(released, 1);
}

TEST(DeviceTensorWrap, CallerOwnedMemoryIsNeverReleased) {
  // The plain wrap keeps its meaning: nothing runs, nothing is freed.
  DeviceTensor a = DeviceTensor::wrap(Device(), kAddress, DType::F32, {4});
  EXPECT_TRUE(a.valid());
  EXPECT_EQ(a.data(), kAddress);
}
