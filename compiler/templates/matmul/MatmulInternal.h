//===- compiler/templates/matmul/MatmulInternal.h - the three matmuls -*- C++ -*-===//
// Used only inside compiler/templates/matmul/: the matmuls' rules
// (MatmulSchedule.cpp), bodies (MatmulSimt.cpp, MatmulMma.cpp,
// MatmulWgmma.cpp, with the tiles they share in MatmulTiles.h) and what the
// rules and bodies both ask; MatmulTemplates.cpp puts them behind the
// KernelTemplate interface.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/emit/KernelEmitter.h"
#include "compiler/schedule/Schedule.h"
#include "runtime/Program.h"

#include <vector>

namespace minijit {

/// The body of each template, after KernelEmitter::header.
void emitMatmulSimt(KernelEmitter &e, const MatmulSimtSchedule &s);
void emitMatmulMma(KernelEmitter &e, const MatmulMmaSchedule &s);
void emitMatmulWgmma(KernelEmitter &e, const MatmulWgmmaSchedule &s);
/// The Hopper matmul of an exact f32 product split in the kernel
/// (MatmulWgmmaSchedule::splitInKernel, MatmulWgmmaSplit.cpp).
void emitMatmulWgmmaSplit(KernelEmitter &e, const MatmulWgmmaSchedule &s);

/// The halves one stage of a tensor-core tile takes in shared memory: rows
/// padded by 8 halves, A as [bm][bk] (or [bk][bm] when stored transposed), B
/// as [bk][bn] (or [bn][bk]).
inline unsigned mmaTileHalves(const MatmulTile &t, bool isA) {
  if (isA)
    return t.vecAT ? t.bk * (t.bm + 8) : t.bm * (t.bk + 8);
  return t.vecBT ? t.bn * (t.bk + 8) : t.bk * (t.bn + 8);
}

/// The TMA descriptors of a Hopper matmul, A's then B's, each naming in
/// `buffer` the kernel parameter (LoweredKernel::params) it describes. A
/// k-major operand loads a whole 64-wide k slice of its 128 (bn) rows at
/// once; an m- or n-major one loads 64 x 64 boxes, 128 bytes of m (n) by 64
/// of k each, side by side.
std::vector<TensorMapSpec> wgmmaTensorMaps(const LoweredKernel &k, const MatmulWgmmaSchedule &s);

/// Whether every store of matmul kernel `k` is contiguous over `vec`
/// consecutive output columns (n a multiple of `vec`): its epilogue may
/// work on vectors of `vec` columns (the column of vector nv is vec * nv).
bool matmulStoresVectorize(const LoweredKernel &k, unsigned vec);

/// How many consecutive output columns a thread of matmul kernel `k` may
/// store together: 4 or 2 where every store vectorizes so
/// (matmulStoresVectorize), 1 where every store still runs along the row
/// (column n + 1 at the address after column n's), 0 where one does not.
unsigned matmulStoreRun(const LoweredKernel &k);

namespace detail {

/// The family's rules: f32 on the CUDA cores, f16/bf16 on the tensor cores;
/// `wgmma`: the target has it (Target::hasWgmma), so f16/bf16 take the
/// Hopper template where TMA can read both operands. Refuses an override
/// value the kernel cannot take.
Expected<Schedule> matmulSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                  const ScheduleOverrides &o, bool wgmma);

} // namespace detail

} // namespace minijit
