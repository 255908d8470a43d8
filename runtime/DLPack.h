//===- runtime/DLPack.h - tensors shared with other frameworks --*- C++ -*-===//
// Zero-copy exchange of device tensors with PyTorch, CuPy, JAX and anything
// else that speaks DLPack (the DLManagedTensor of DLPack 0.6 and later, as
// torch.utils.dlpack.to_dlpack makes it): a foreign tensor becomes a
// DeviceTensor an Executable can read or write, and a DeviceTensor can be
// handed out the same way.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/Memory.h"

#include <dlpack/dlpack.h>

namespace minijit {

/// DLPack's type code for bool (kDLBool, added in DLPack 0.8; the 0.6 header
/// lacks it): one byte holding 0 or 1, as minijit's bool.
constexpr uint8_t kDLPackBoolCode = 6;

/// What checkDLTensor finds in a DLTensor minijit can use.
struct DLTensorInfo {
  DType dtype = DType::F32; ///< minijit's dtype for the DLPack one
  Shape shape;              ///< the DLTensor's shape
  CUdeviceptr data = 0;     ///< `data` plus `byte_offset`
};

/// Checks that `t` describes a tensor minijit can run on in place and returns
/// its dtype, shape and address. Touches no memory and needs no driver.
/// Throws GraphError ("dlpack: ...") when
/// - the memory is not CUDA device memory of device `deviceOrdinal`
///   (kDLCUDA with that device id; kDLCUDAManaged, which every device can
///   read, is taken whatever its id);
/// - the dtype is not one of minijit's: float32, float16, bfloat16, int32,
///   int64 and bool map to F32, F16, BF16, I32, I64 and Bool; vector types (lanes != 1) and
///   uint8 (whose bytes need not be 0 or 1) are refused;
/// - the rank is above kMaxRank, a dimension is below 0, or there are more
///   than kMaxElements elements;
/// - the strides are not row-major (null strides mean row-major; a dimension
///   of size 1 may have any stride);
/// - the address (`data` + `byte_offset`) is null or not 16-byte aligned, as
///   the kernels' vector loads need (a slice that starts inside a tensor).
/// A tensor of no elements (a dimension of 0) is taken with any strides and
/// any address, null too: nothing reads or writes it.
DLTensorInfo checkDLTensor(const DLTensor &t, int deviceOrdinal);

/// DLPack's description of a minijit dtype, with one lane; bool has the code
/// kDLPackBoolCode.
DLDataType toDLDataType(DType t);

/// Wraps another framework's tensor as a DeviceTensor on `dev`, without a
/// copy. On success minijit owns `t`: it calls `t->deleter(t)` (when not
/// null) exactly once, when the last copy of the returned tensor is gone,
/// from whichever thread drops it. A producer's pending work on the memory is
/// not waited for, and neither is minijit's before the deleter runs:
/// synchronize on both sides (Executable::run does for minijit's).
/// Throws GraphError as checkDLTensor does, and for a null `t`; on a throw the
/// caller still owns `t` (a Python capsule is then not marked as used).
DeviceTensor fromDLPack(const Device &dev, DLManagedTensor *t);

/// Hands `t` out to another framework, without a copy. It is described as a
/// kDLCUDA tensor on `t.device()`, row-major with explicit strides and
/// byte_offset 0. The result holds a reference to the memory (and to the
/// device), so the memory stays valid after every minijit copy of `t` is
/// gone, and it owns its shape and strides arrays. Whoever receives it must
/// call `deleter` exactly once, which frees all of that
/// (torch.utils.dlpack.from_dlpack does, when the torch tensor is freed).
/// Throws GraphError for an invalid tensor.
DLManagedTensor *toDLPack(const DeviceTensor &t);

} // namespace minijit
