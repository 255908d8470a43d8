//===- compiler/templates/KernelTemplate.h - one object per kernel template -*- C++ -*-===//
// A kernel template (pointwise, transpose, inner row, outer column, scan,
// the three matmuls) as one interface: the rules that choose it, how its
// schedule reads, the overrides the tuner tries, its CUDA body, and what its
// launch needs. Each family of templates is a folder below this one
// (templates/pointwise/, rows/, scan/, matmul/, attention/) holding its
// rules, bodies and template objects; the registry is one list
// (Templates.def). The
// scheduling stage, the emitter, the tuner and the pipeline ask
// kernelTemplate(s.kind()) instead of switching on the kind.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/schedule/Schedule.h"
#include "runtime/Program.h"
#include "runtime/Target.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <optional>
#include <string>
#include <vector>

namespace minijit {

class KernelEmitter;

/// One kernel template. Stateless: every method reads the schedule (of this
/// template's kind) it is given.
class KernelTemplate {
public:
  virtual ~KernelTemplate() = default;

  /// The schedule kind it emits (Schedule::kind()).
  virtual ScheduleKind kind() const = 0;
  /// A short name, as `minijit profile` records spell it: "inner_row",
  /// "matmul_wgmma".
  virtual llvm::StringRef name() const = 0;
  /// The ScheduleOverrides keys (as the text spells them) that concern it:
  /// those its rules read, and those that steer a kernel away from it
  /// (transpose=0, wgmma=0). Its candidates set no others.
  virtual llvm::ArrayRef<llvm::StringRef> overrideKeys() const = 0;
  /// Whether its multiply-adds run on the tensor cores (the profile counts
  /// their FLOPs apart).
  virtual bool usesTensorCores() const { return false; }
  /// Whether its grid is tiles whose waves over the SMs --emit=fused
  /// reports (the matmuls).
  virtual bool tilesComeInWaves() const { return false; }

  /// The lowered kernels (KernelKinds) whose template its family's rules
  /// choose: set on one template of each family, the one that carries the
  /// rules (a reduction's pick inner rows or outer columns; the attention
  /// backward's, for both of its kernels); empty on the others.
  virtual std::vector<KernelKind> rulesFor() const { return {}; }
  /// Those rules (on the template whose rulesFor() holds k.kind): a template
  /// of the family and its parameters, from the kernel's sizes, the device
  /// and `target`'s features. Refuses ("schedule override: ...") an
  /// override value the kernel cannot take (chooseSchedule).
  virtual Expected<Schedule> choose(const LoweredKernel &k, const DeviceProperties &dev,
                                    const ScheduleOverrides &overrides,
                                    const Target &target) const;

  /// One line for --emit=fused and the kernel's header comment, e.g.
  /// "inner row: 32 threads per row, ...". GridText::AtLaunch leaves out
  /// the grid and tile counts a kernel serving many sizes gets at launch.
  virtual std::string describe(const Schedule &s, GridText grid) const = 0;

  /// The overrides a search tries around the rules' choice `def` (the
  /// default itself not among them), most promising first; only this
  /// template's keys (candidateOverrides in compiler/tune/CandidateSpace.h).
  virtual std::vector<ScheduleOverrides> candidates(const LoweredKernel &body,
                                                    const ScheduledKernel &def,
                                                    const DeviceProperties &dev) const = 0;

  /// The kernel's body after KernelEmitter::header, at indent 1.
  virtual void emit(KernelEmitter &e, const Schedule &s) const = 0;

  /// For a kernel that may serve many sizes (LoweredKernel::symbolic):
  /// sets `s`, chosen for `k`'s bucket (atBucketExtent), to the grid (and
  /// tile counts) of `k`'s own extent, and says true; false (the default)
  /// for a template whose kernel text holds its extent (a transpose, a
  /// column reduction, a scan, attention), which is chosen per size instead.
  virtual bool sizeGridForExtent(Schedule &, const LoweredKernel &,
                                 const DeviceProperties &) const {
    return false;
  }

  // Launch traits: what the pipeline asks of a scheduled kernel.

  /// The target its kernels compile for, given the graph's `target`: the
  /// same, or its architecture-specific variant (wgmma: sm_90a).
  virtual Target compileTarget(const Target &target) const { return target; }
  /// Whether the grid walks the work (a block per SM), not a block per tile.
  virtual bool persistent() const { return false; }
  /// Whether every block of the grid must be resident at once (blocks that
  /// wait for each other at a barrier in global memory).
  virtual bool coResident(const Schedule &) const { return false; }
  /// The TMA descriptors its launch passes, each naming in `buffer` the
  /// kernel parameter (LoweredKernel::params) it describes; none by default.
  virtual std::vector<TensorMapSpec> tensorMaps(const LoweredKernel &, const Schedule &) const {
    return {};
  }
  /// Whether kernel `k` multiplies f32 operands as TF32 (the pipeline
  /// reports that the graph ran with TF32, or its tf32x3 split).
  virtual bool readsF32AsTf32(const LoweredKernel &) const { return false; }
  /// Registers a thread that ptxas must give the kernel, else the template
  /// is at fault (a register split by setmaxnreg); 0: any.
  virtual unsigned requiredRegisters() const { return 0; }
};

/// The template of schedules of kind `kind`: one entry of one table, built
/// on first use (no static constructors).
const KernelTemplate &kernelTemplate(ScheduleKind kind);

/// Chooses the template and its parameters: the rules of the family whose
/// template's rulesFor() is k.kind (KernelTemplate::choose). `overrides`
/// (CompileOptions::scheduleOverrides, or $MINIJIT_SCHEDULE's) set
/// parameters by hand for experiments; each template applies the keys that
/// concern it where it computes its geometry and ignores the others.
/// Refuses ("schedule override: ...") an override value the kernel cannot
/// take. `target` is what the kernels compile for: its features decide the
/// Hopper matmul (Target::hasWgmma) and clusters of blocks for long rows
/// (Target::hasClusters).
Expected<Schedule> chooseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                  const ScheduleOverrides &overrides, const Target &target);
/// chooseSchedule for the device's own target (DeviceProperties::target).
Expected<Schedule> chooseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                  const ScheduleOverrides &overrides = {});

/// chooseSchedule for a kernel that may serve many sizes
/// (LoweredKernel::symbolic): the rules see the extent of its bucket, and
/// the grid (and tile counts) are sized for the kernel's own extent. A
/// template that cannot take its extent at launch (a transpose, a column
/// reduction, a scan) is chosen for the sizes bound, and `k.symbolic` is
/// cleared. Kernels without names: chooseSchedule. Refuses as it does.
Expected<Schedule> chooseScheduleForSizes(LoweredKernel &k, const DeviceProperties &dev,
                                          const ScheduleOverrides &overrides,
                                          const Target &target);

/// The scheduling stage for one kernel: chooseScheduleForSizes, and for an
/// inner row kernel whose sum of exp(x - max) can run in its max's pass
/// (sumExpsOnline), that rewrite where the kernel then reads its rows once
/// in all; it and the sum of squared deviations in its mean's pass
/// (sumSquaresOnline) where its passes read the rows from DRAM; both always
/// with `online=1` (never with `online=0`); scheduled anew. `body` is the
/// kernel as lowering made it. Refuses an override the kernel cannot take:
/// the pipeline reports it, the search drops it.
Expected<ScheduledKernel> scheduleKernel(const LoweredKernel &body, const DeviceProperties &dev,
                                         const ScheduleOverrides &overrides,
                                         const Target &target);

/// kernelTemplate(s.kind()).describe(s, grid).
std::string describeSchedule(const Schedule &s, GridText grid = GridText::Number);

/// The kernel's source, the extern "C" entry point `name`: the emitter's
/// header, then the template's body; compile it after kernelPreamble().
std::string emitKernel(const LoweredKernel &k, const Schedule &s, const std::string &name);

/// The kernel's preamble and source with its place in the graph and the
/// IR's names taken out (index 0, entry point `k`, values and buffers
/// numbered, no comments): equal for two kernels exactly when their sources
/// differ only in names and comments, so one compiled image serves both
/// (the 16 layers of an MLP compile once).
std::string structuralSource(const LoweredKernel &k, const Schedule &s);

} // namespace minijit
