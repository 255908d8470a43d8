//===- ir/Npy.h - host tensors in numpy's .npy format ----------*- C++ -*-===//
// Reading and writing numpy's .npy files (format versions 1.0, 2.0 and 3.0,
// little-endian, C order), so a graph runs on a user's own data and its
// results can be checked with anything else.
//
// Element types: f32 `<f4`, f16 `<f2`, i32 `<i4`, i64 `<i8`, bool `|b1`. numpy has no
// bf16: a bf16 tensor is written as `<f4` (exactly: every bf16 value is an
// f32), and read from `<f4` rounding each value to the nearest bf16 (ties to
// even). A float tensor may also be read from `<f8` (numpy's default),
// rounding to the tensor's dtype.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/HostTensor.h"

#include <optional>
#include <string>
#include <string_view>
#include <utility>

namespace minijit {

/// The tensor in `path`. With `want` set, the file must hold that shape and a
/// dtype that converts to it (see above); the result has `want`'s dtype.
/// Throws GraphError naming `what` (e.g. "input %x") and the file for a
/// missing, truncated or malformed file, a big-endian or Fortran-order
/// array, an unsupported dtype, or a wrong shape or dtype.
HostTensor readNpy(std::string_view path, std::string_view what,
                   std::optional<std::pair<DType, Shape>> want = std::nullopt);

/// The .npy bytes of `t` (format 1.0; 2.0 when the header needs it).
std::string npyBytes(const HostTensor &t);

/// Writes `t` to `path` (through a temporary file renamed into place).
/// Throws GraphError when the file cannot be written.
void writeNpy(std::string_view path, const HostTensor &t);

} // namespace minijit
