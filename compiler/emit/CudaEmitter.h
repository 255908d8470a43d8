//===- compiler/emit/CudaEmitter.h - readable CUDA C++ from a kernel -*- C++ -*-===//
// Turns a lowered kernel and its schedule into CUDA C++: one assignment per
// value, named after the IR value, with a comment naming the op; a header
// comment with what the kernel holds, reads, writes and how it is scheduled.
// The output is deterministic and needs no headers (NVRTC compiles it fast).
// It reads the lowered form and the schedule only, never the graph.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"
#include "compiler/schedule/Schedule.h"

#include <set>
#include <string>

namespace minijit {

/// Helpers every kernel uses (16-bit conversions, NaN-aware min/max, vector
/// loads, warp and block reductions), then the matmul helpers (cp.async,
/// ldmatrix, mma.sync). Plain CUDA, no includes.
const std::string &cudaPreamble();
/// What a kernel of clusters (LaunchGeometry::cluster > 1, sm_90) needs
/// after cudaPreamble(): mj_cluster_sync, the cluster's barrier.
const std::string &clusterPreamble();
/// After cudaPreamble() for a kernel that holds a random op (rand, randn,
/// dropout): Philox4x32-10 and the calls the emitter makes (mj_rand,
/// mj_randn, mj_dropout), the arithmetic of ir/Philox.h.
const std::string &randomPreamble();
/// Whether kernel `k` holds a random op (and needs randomPreamble()).
bool holdsRandom(const LoweredKernel &k);
/// After cudaPreamble() for a chained scan (ScanSchedule::chained()): the
/// status words of its tiles and the decoupled look-back.
const std::string &chainedScanPreamble();
/// After cudaPreamble() for a kernel that holds a variance kept online
/// (KReduction::welfordMean): Welford's update and its combines.
const std::string &welfordPreamble();
/// Whether kernel `k` holds such a reduction (and needs welfordPreamble()).
bool holdsWelford(const LoweredKernel &k);
/// After cudaPreamble() for a kernel that holds an i64 value: mj_iadd and
/// its kin for long long, and the functors of i64 reductions (MjSumL, ...).
const std::string &i64Preamble();
/// Whether kernel `k` holds an i64 value, parameter or reduction (and
/// needs i64Preamble()).
bool holdsI64(const LoweredKernel &k);

/// What a Hopper kernel (a matmul or an attention on wgmma) needs after
/// cudaPreamble(), for a translation unit of one or several kernels: the
/// helpers once (mbarriers, TMA loads, wgmma descriptors and fences), then
/// each piece once (hopperPieces: a wgmma, the clusters' helpers); empty for
/// none.
std::string hopperPreamble(const std::set<std::string> &wgmmas);
/// What kernel `k` scheduled as `s` adds to the helpers: the wgmmas of its
/// tile widths and dtype, and with clusters their helpers; none for a
/// kernel that is not a Hopper one.
std::set<std::string> hopperPieces(const LoweredKernel &k, const Schedule &s);
/// Its parts: the helpers every Hopper kernel shares, and the wgmma of one
/// tile width and operand dtype (f16, bf16, or f32 read as TF32) with its
/// accumulators written out, called wgmmaName(n, dtype).
const std::string &hopperHelpers();
std::string wgmmaFunction(unsigned n, DType dtype);
std::string wgmmaName(unsigned n, DType dtype);
/// The wgmma m64n{n} whose A operand is a thread's fragment in registers
/// (four 32-bit values), B in shared memory, and its name: TF32 (k8, the
/// product split in the kernel, MatmulWgmmaSchedule::splitInKernel) or f16
/// and bf16 (k16, B k- or n-major: attention's P V).
std::string wgmmaRsFunction(unsigned n, DType dtype);
std::string wgmmaRsName(unsigned n, DType dtype);

/// The preamble kernel `k` scheduled as `s` is compiled after: cudaPreamble(),
/// clusterPreamble() for a kernel of clusters, randomPreamble() for one that
/// holds a random op, welfordPreamble() for one that holds a variance kept
/// online, chainedScanPreamble() for a chained scan, and hopperPreamble()
/// for a Hopper matmul.
std::string kernelPreamble(const LoweredKernel &k, const Schedule &s);

/// A name that says the schedule and the ops: poi_mul_tanh_add_k1,
/// softmax_row_k0, red_sum_col_k2.
std::string kernelName(const LoweredKernel &k, const Schedule &s);

} // namespace minijit
