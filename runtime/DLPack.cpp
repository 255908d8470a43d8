//===- runtime/DLPack.cpp - tensors shared with other frameworks ----------===//
#include "runtime/DLPack.h"

#include "ir/Error.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <iterator>
#include <memory>
#include <string>

namespace minijit {

namespace {

std::string deviceTypeName(int type) {
  switch (type) {
  case kDLCPU:
    return "CPU memory";
  case kDLCUDA:
    return "CUDA device memory";
  case kDLCUDAHost:
    return "pinned host memory";
  case kDLCUDAManaged:
    return "CUDA managed memory";
  case kDLOpenCL:
    return "OpenCL memory";
  case kDLVulkan:
    return "Vulkan memory";
  case kDLMetal:
    return "Metal memory";
  case kDLROCM:
    return "ROCm device memory";
  case kDLROCMHost:
    return "ROCm host memory";
  default:
    return "memory of another kind";
  }
}

/// "float32", "uint8", "bfloat16", "float32x4", "code 9, 8 bits".
std::string dataTypeName(DLDataType t) {
  static const char *names[] = {"int", "uint", "float", "opaque", "bfloat", "complex", "bool"};
  std::string s = t.code < std::size(names)
                      ? names[t.code] + std::to_string(t.bits)
                      : llvm::formatv("code {0}, {1} bits", t.code, t.bits).str();
  if (t.lanes != 1)
    s += "x" + std::to_string(t.lanes);
  return s;
}

DType dtypeOf(DLDataType t) {
  if (t.lanes != 1)
    throw GraphError(llvm::formatv("dlpack: vector dtype {0} ({1} lanes) is not supported; "
                                   "minijit needs one lane per element",
                                   dataTypeName(t), t.lanes)
                         .str());
  if (t.code == kDLFloat && t.bits == 32)
    return DType::F32;
  if (t.code == kDLFloat && t.bits == 16)
    return DType::F16;
  if (t.code == kDLBfloat && t.bits == 16)
    return DType::BF16;
  if (t.code == kDLInt && t.bits == 32)
    return DType::I32;
  if (t.code == kDLInt && t.bits == 64)
    return DType::I64;
  if (t.code == kDLPackBoolCode && t.bits == 8)
    return DType::Bool;
  std::string msg = "dlpack: dtype " + dataTypeName(t) +
                    " is not supported (minijit has float32, float16, bfloat16, int32, int64, bool)";
  if (t.code == kDLUInt && t.bits == 8)
    msg += "; uint8 is not taken as bool, whose bytes must be 0 or 1";
  throw GraphError(msg);
}

std::string listStr(llvm::ArrayRef<int64_t> v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i)
    s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

/// The memory toDLPack hands out, with the arrays its DLTensor points to.
struct ExportedTensor {
  DeviceTensor tensor; ///< keeps the memory and its device alive
  int64_t shape[kMaxRank] = {};
  int64_t strides[kMaxRank] = {};
  DLManagedTensor managed = {};
};

void deleteExported(DLManagedTensor *m) { delete static_cast<ExportedTensor *>(m->manager_ctx); }

} // namespace

DLDataType toDLDataType(DType t) {
  switch (t) {
  case DType::F32:
    return {kDLFloat, 32, 1};
  case DType::F16:
    return {kDLFloat, 16, 1};
  case DType::BF16:
    return {kDLBfloat, 16, 1};
  case DType::I32:
    return {kDLInt, 32, 1};
  case DType::Bool:
    return {kDLPackBoolCode, 8, 1};
  case DType::I64:
    return {kDLInt, 64, 1};
  }
  llvm_unreachable("unknown dtype");
}

DLTensorInfo checkDLTensor(const DLTensor &t, int deviceOrdinal) {
  int type = t.device.device_type;
  if (type != kDLCUDA && type != kDLCUDAManaged)
    throw GraphError(llvm::formatv("dlpack: the tensor is in {0} (device type {1}); minijit runs "
                                   "on CUDA device memory",
                                   deviceTypeName(type), type)
                         .str());
  if (type == kDLCUDA && t.device.device_id != deviceOrdinal)
    throw GraphError(llvm::formatv("dlpack: the tensor is on CUDA device {0}, the minijit device "
                                   "is {1}",
                                   t.device.device_id, deviceOrdinal)
                         .str());
  DLTensorInfo info;
  info.dtype = dtypeOf(t.dtype);
  if (t.ndim < 0 || t.ndim > static_cast<int>(kMaxRank))
    throw GraphError(
        llvm::formatv("dlpack: rank {0} exceeds minijit's maximum of {1}", t.ndim, kMaxRank).str());
  if (t.ndim > 0 && !t.shape)
    throw GraphError(llvm::formatv("dlpack: null shape for a tensor of rank {0}", t.ndim).str());
  llvm::ArrayRef<int64_t> dims(t.shape, t.ndim);
  info.shape = Shape(dims);
  checkShape(info.shape, "dlpack");
  // A tensor of no elements is never read or written: its strides, data
  // pointer (null for a zero-element torch tensor) and alignment do not matter.
  if (info.shape.isEmpty()) {
    info.data = t.data ? reinterpret_cast<CUdeviceptr>(t.data) + t.byte_offset : 0;
    return info;
  }
  if (t.strides) {
    llvm::ArrayRef<int64_t> strides(t.strides, t.ndim);
    std::vector<int64_t> rowMajor = info.shape.strides();
    for (int i = 0; i < t.ndim; ++i)
      if (dims[i] != 1 && strides[i] != rowMajor[i])
        throw GraphError(llvm::formatv("dlpack: strides {0} of a {1} tensor are not row-major "
                                       "(expected {2}); make it contiguous first (torch: "
                                       ".contiguous())",
                                       listStr(strides), info.shape.str(), listStr(rowMajor))
                             .str());
  }
  if (!t.data)
    throw GraphError("dlpack: the data pointer is null");
  info.data = reinterpret_cast<CUdeviceptr>(t.data) + t.byte_offset;
  if (info.data % 16 != 0)
    throw GraphError(llvm::formatv("dlpack: the address {0:x} (data {1:x} + byte_offset {2}) is "
                                   "not 16-byte aligned, as minijit's vector loads need; copy "
                                   "the tensor first (torch: .clone())",
                                   info.data, reinterpret_cast<uintptr_t>(t.data), t.byte_offset)
                         .str());
  return info;
}

DeviceTensor fromDLPack(const Device &dev, DLManagedTensor *t) {
  if (!t)
    throw GraphError("dlpack: the DLManagedTensor is null");
  DLTensorInfo info = checkDLTensor(t->dl_tensor, dev.ordinal());
  return DeviceTensor::wrap(dev, info.data, info.dtype, info.shape, [t] {
    if (t->deleter)
      t->deleter(t);
  });
}

DLManagedTensor *toDLPack(const DeviceTensor &t) {
  if (!t.valid())
    throw GraphError("toDLPack: the tensor is empty (default-constructed)");
  auto e = std::make_unique<ExportedTensor>();
  e->tensor = t;
  const Shape &s = t.shape();
  std::vector<int64_t> strides = s.strides();
  for (unsigned i = 0; i < s.rank(); ++i) {
    e->shape[i] = s[i];
    e->strides[i] = strides[i];
  }
  DLTensor &dl = e->managed.dl_tensor;
  dl.data = reinterpret_cast<void *>(t.data());
  dl.device = {kDLCUDA, t.device().ordinal()};
  dl.ndim = static_cast<int>(s.rank());
  dl.dtype = toDLDataType(t.dtype());
  dl.shape = e->shape;
  dl.strides = e->strides;
  dl.byte_offset = 0;
  e->managed.manager_ctx = e.get();
  e->managed.deleter = deleteExported;
  return &e.release()->managed;
}

} // namespace minijit
