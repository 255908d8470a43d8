//===- compiler/schedule/Schedule.h - kernel templates and their parameters -*- C++ -*-===//
// A schedule picks a template for a lowered kernel (pointwise, inner or outer
// reduction, matmul on CUDA cores or tensor cores, ...) and that template's
// parameters, from the kernel's sizes and the device. Each template has its
// own parameter struct, in its family's folder (compiler/templates/<family>/
// *Params.h); a Schedule is one of them, in Templates.def's order. Printable
// and deterministic: the same kernel and device give the same schedule.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"
#include "compiler/schedule/ScheduleOverrides.h"
#include "compiler/templates/Params.h"
#include "runtime/DeviceProperties.h"
#include "runtime/Program.h"
#include "runtime/Target.h"

#include <optional>
#include <string>
#include <variant>

namespace minijit {

/// The kernel templates, one a line of compiler/templates/Templates.def,
/// which says what each does.
enum class ScheduleKind {
#define MINIJIT_TEMPLATE(KIND, PARAMS, GETTER) KIND,
#include "compiler/templates/Templates.def"
};

/// How a schedule's description (describeSchedule, in compiler/templates/)
/// prints the grid: its size, or "sized at launch".
enum class GridText { Number, AtLaunch };

/// The scratch memory a reduction split over blocks needs (RowSchedule or
/// ColumnSchedule splits > 1): counters (a row's blocks done, or at a
/// barrier; with barriers a second one per row, blocks past the last; for
/// columns one per block of 32 columns), then the partial results, `words`
/// per block: the one of reduction r from block `part` of row (or column)
/// `row` at (row * splits + part) * words + r, and after one word per
/// reduction the further words of the partials that are pairs or triples
/// (an online sum's max, an argmax's or argmin's position, a Welford
/// triple's mean and count), in reduction order (secondWordSlot). The emitter addresses it; the compiler allocates
/// bytes() for the launch, zeroed, and the kernel leaves it zeroed.
struct SplitWorkspace {
  int64_t rows;
  unsigned splits;
  int words;
  int64_t counterWords;
  int64_t counters() const { return counterWords; } ///< words before the partials
  int64_t partials() const { return rows * splits * words; }
  int64_t bytes() const { return (counters() + partials()) * 4; }
};

/// The words of reduction `r`'s partial result past its value in the split
/// workspace: one for an online sum's max or an argmax's or argmin's
/// position, two for a Welford sum's mean and count, none otherwise.
int extraWords(const KReduction &r);
/// Whether reduction `r`'s partial result is more than one word (extraWords).
bool hasSecondWord(const KReduction &r);
/// Where a block's partials hold the second word of reduction `r` (one
/// with hasSecondWord; its third, if any, follows): after one word per
/// reduction, in reduction order.
int secondWordSlot(const LoweredKernel &k, int r);

namespace detail {
/// std::variant of the parameter structs that follow `void` (which a list
/// made by an X-macro, each entry after a comma, starts with).
template <typename Void, typename... Params> struct ParamsVariant {
  using type = std::variant<Params...>;
};
} // namespace detail

/// One template's parameters: one of the families' parameter structs
/// (compiler/templates/<family>/*Params.h), in ScheduleKind's order.
struct Schedule {
  detail::ParamsVariant<void
#define MINIJIT_TEMPLATE(KIND, PARAMS, GETTER) , PARAMS
#include "compiler/templates/Templates.def"
                        >::type params;

  ScheduleKind kind() const { return static_cast<ScheduleKind>(params.index()); }
  template <typename T> const T &as() const { return std::get<T>(params); }
  template <typename T> const T *getIf() const { return std::get_if<T>(&params); }
  const LaunchGeometry &geometry() const;
  /// Dynamic shared memory the launch asks for (the multi-stage matmul tiles).
  unsigned dynamicSharedBytes() const;
};

/// A lowered kernel as the scheduling stage leaves it: its body (rewritten
/// or not) and its schedule. The stage (scheduleKernel, chooseSchedule) is
/// in compiler/templates/KernelTemplate.h, above the templates' rules.
struct ScheduledKernel {
  LoweredKernel lowered;
  Schedule schedule;
};

/// `k` as the rules see it when it may serve many sizes
/// (LoweredKernel::symbolic): its outer extent rounded up to its bucket's
/// (a power of two), so that every size of the bucket gives the same text.
LoweredKernel atBucketExtent(const LoweredKernel &k);
/// (Each template sets its schedule's grid for the kernel's own extent:
/// KernelTemplate::sizeGridForExtent.)

/// Resident blocks per SM of a launch of `s` whose threads use `registers`
/// each (0: unknown, estimated from the template: a matmul's accumulators
/// and fragments; others assume 32), bounded by threads, registers, shared
/// memory and blocks per SM.
int blocksPerSM(const Schedule &s, const DeviceProperties &dev, unsigned registers);
/// "2.08 waves of 264 blocks (2 per SM), the last 8 % full": the wave
/// quantization of the grid, as the profiler reports it.
std::string wavesText(const Schedule &s, const DeviceProperties &dev, unsigned registers);

/// The workspace of `k` scheduled as `s`, whether split or not.
SplitWorkspace splitWorkspace(const LoweredKernel &k, const RowSchedule &s);
SplitWorkspace splitWorkspace(const LoweredKernel &k, const ColumnSchedule &s);
/// A chained scan's: the blocks' ticket counter (two words), then a status
/// word pair per tile (ScanSchedule::splits a row).
SplitWorkspace splitWorkspace(const LoweredKernel &k, const ScanSchedule &s);
/// Bytes of workspace the schedule's launch needs; 0 when it is not split.
int64_t workspaceBytes(const LoweredKernel &k, const Schedule &s);

/// How an access behaves across the `vec` lanes of a vector, when the
/// element index `x` (LoweredKernel::elem or LoweredKernel::k) is split as
/// x = vec*xv + j.
struct LaneAccess {
  enum class Kind { Same, Contiguous, Gather } kind = Kind::Same;
  IndexExpr base;                   ///< offset at lane 0, over xv
  std::vector<IndexExpr> perLane;   ///< Gather: the offset of each lane
};

/// Splits `x` (extent `extent`, a multiple of `vec`) as vec*xv + j in `ctx`,
/// with `xv` named `vecName`, and classifies `offset`: the same element for
/// every lane, contiguous and aligned to `vec`, or a gather. An operand of a
/// concat or pad read through a clamp whose range starts and ends at whole
/// vectors (the halves of a rotary embedding) is contiguous too: its lanes
/// are inside the operand all together or none, and where none the values
/// are not used, so `base` then reads any whole vector in bounds.
LaneAccess analyzeLanes(IndexContext &ctx, const IndexExpr &offset, const IndexExpr &x,
                        int64_t extent, unsigned vec, const std::string &vecName);

} // namespace minijit
