//===- compiler/templates/Templates.cpp - the registry of kernel templates -===//
// The one table of templates (Templates.def: a new template is one line
// there), and what goes through it: the choice of a kernel's template (its
// family's rules), a schedule's description and a kernel's source.
//===----------------------------------------------------------------------===//
#include "compiler/templates/KernelTemplate.h"

#include "compiler/emit/CudaEmitter.h"
#include "compiler/emit/KernelEmitter.h"
#include "compiler/templates/TemplatesInternal.h"

#include "llvm/ADT/STLExtras.h"

#include "llvm/Support/ErrorHandling.h"
#include "llvm/Support/FormatVariadic.h"

#include <cassert>
#include <iterator>

namespace minijit {

namespace {

using TemplateGetter = const KernelTemplate &(*)();

/// Every template, in ScheduleKind's order.
constexpr TemplateGetter kTemplates[] = {
#define MINIJIT_TEMPLATE(KIND, PARAMS, GETTER) detail::GETTER,
#include "compiler/templates/Templates.def"
};

} // namespace

const KernelTemplate &kernelTemplate(ScheduleKind kind) {
  size_t i = static_cast<size_t>(kind);
  assert(i < std::size(kTemplates) && "a schedule kind without a template");
  const KernelTemplate &t = kTemplates[i]();
  assert(t.kind() == kind && "kTemplates is out of ScheduleKind's order");
  return t;
}

Expected<Schedule> KernelTemplate::choose(const LoweredKernel &, const DeviceProperties &,
                                          const ScheduleOverrides &, const Target &) const {
  llvm_unreachable("choose asked of a template whose rulesFor() is not the kernel's kind");
}

Expected<Schedule> chooseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                  const ScheduleOverrides &overrides, const Target &target) {
  for (TemplateGetter get : kTemplates)
    if (llvm::is_contained(get().rulesFor(), k.kind))
      return get().choose(k, dev, overrides, target);
  llvm_unreachable("a kernel kind no template's rules choose for");
}

Expected<Schedule> chooseSchedule(const LoweredKernel &k, const DeviceProperties &dev,
                                  const ScheduleOverrides &overrides) {
  return chooseSchedule(k, dev, overrides, dev.target());
}

std::string describeSchedule(const Schedule &s, GridText grid) {
  return kernelTemplate(s.kind()).describe(s, grid);
}

std::string emitKernel(const LoweredKernel &k, const Schedule &s, const std::string &name) {
  KernelEmitter e(k, s, name);
  const KernelTemplate &t = kernelTemplate(s.kind());
  e.header(t.describe(s, e.symbolic() ? GridText::AtLaunch : GridText::Number));
  t.emit(e, s);
  return e.W.text();
}

std::string structuralSource(const LoweredKernel &k, const Schedule &s) {
  LoweredKernel a = k;
  a.index = 0;
  for (size_t i = 0; i < a.values.size(); ++i) {
    a.values[i].name = "v" + std::to_string(i);
    a.values[i].text.clear();
  }
  for (size_t i = 0; i < a.params.size(); ++i)
    a.params[i].name = a.params[i].irName = "p" + std::to_string(i);
  for (size_t i = 0; i < a.reductions.size(); ++i)
    a.reductions[i].name = "r" + std::to_string(i);
  for (KHeld &h : a.held)
    h.text.clear();
  return kernelPreamble(a, s) + "\n" + emitKernel(a, s, "k");
}

namespace detail {

std::string gridWords(int64_t grid, GridText how) {
  return how == GridText::AtLaunch ? std::string("grid sized at launch")
                                   : "grid " + std::to_string(grid);
}

std::string tileWords(int64_t tilesM, int64_t tilesN, GridText how) {
  if (how == GridText::AtLaunch)
    return llvm::formatv(" (m in tiles x {0})", tilesN).str();
  return llvm::formatv(" ({0}x{1} tiles)", tilesM, tilesN).str();
}

std::vector<int64_t> pow2Around(int64_t center, int64_t lo, int64_t hi) {
  std::vector<int64_t> out;
  if (center >= lo && center <= hi)
    out.push_back(center);
  for (int64_t step = 2; center / step >= lo || center * step <= hi; step *= 2) {
    if (center / step >= lo && center % step == 0)
      out.push_back(center / step);
    if (center * step <= hi)
      out.push_back(center * step);
  }
  return out;
}

std::vector<ScheduleOverrides> eachWith(const std::vector<ScheduleOverrides> &bases,
                                        std::optional<int64_t> ScheduleOverrides::*field,
                                        int64_t value) {
  std::vector<ScheduleOverrides> out = bases;
  for (ScheduleOverrides &o : out)
    o.*field = value;
  return out;
}

} // namespace detail

} // namespace minijit
