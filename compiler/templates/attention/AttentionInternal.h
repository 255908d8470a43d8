//===- compiler/templates/attention/AttentionInternal.h - the attention templates -*- C++ -*-===//
// Used only inside compiler/templates/attention/: the attention templates'
// rules (AttentionSchedule.cpp) and bodies (Attention.cpp, AttentionMma.cpp,
// AttentionBackward.cpp, with what they write alike in AttentionCommon.h); AttentionTemplate.cpp puts
// them behind the KernelTemplate interface.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/emit/KernelEmitter.h"
#include "compiler/schedule/Schedule.h"

namespace minijit {

/// The body of each template, after KernelEmitter::header.
void emitAttention(KernelEmitter &e, const AttentionSchedule &s);
void emitAttentionMma(KernelEmitter &e, const AttentionMmaSchedule &s);
void emitAttentionWgmma(KernelEmitter &e, const AttentionWgmmaSchedule &s);
void emitAttentionBackward(KernelEmitter &e, const AttentionBackwardSchedule &s);

namespace detail {

/// The family's rules: the tensor cores' kernel for f16/bf16 head dims of
/// whole 16s up to 128 (Hopper's, on wgmma, wherever it takes the attention
/// and `wgmma=0` does not keep mma.sync's), else the CUDA cores'. Refuses an override value the
/// kernel cannot take.
Expected<Schedule> attentionSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                     const ScheduleOverrides &o, const Target &target);
/// The backward's two kernels (dK and dV by tiles of keys, dQ by tiles of
/// queries): f32 on the CUDA cores.
Expected<Schedule> attentionBackwardSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                             const ScheduleOverrides &o);

} // namespace detail

} // namespace minijit
