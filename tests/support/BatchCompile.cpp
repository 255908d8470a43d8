//===- tests/support/BatchCompile.cpp - many programs' kernels in one NVRTC call ===//
#include "tests/support/BatchCompile.h"

#include "compiler/CompileDetail.h"
#include "compiler/Mutation.h"
#include "compiler/emit/CudaEmitter.h"
#include "compiler/nvrtc/Nvrtc.h"

#include <cassert>
#include <cctype>
#include <memory>
#include <optional>
#include <set>

namespace minijit {

namespace {
bool identifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
} // namespace

std::string renameIdentifier(const std::string &text, const std::string &from,
                             const std::string &to) {
  std::string out;
  size_t at = 0;
  for (size_t p = text.find(from); p != std::string::npos; p = text.find(from, p + from.size())) {
    bool starts = p == 0 || !identifierChar(text[p - 1]);
    bool ends = p + from.size() == text.size() || !identifierChar(text[p + from.size()]);
    if (!starts || !ends)
      continue;
    out.append(text, at, p - at);
    out += to;
    at = p + from.size();
  }
  out.append(text, at, std::string::npos);
  return out;
}

void compileTogether(const std::vector<CompiledGraph *> &programs,
                     const std::vector<std::string> &nvrtcOptions) {
  std::string unit, first;
  std::optional<Target> target;
  // Hopper matmuls need their helpers, and the architecture-specific target
  // (whose image the others load from as well).
  std::set<std::string> wgmmas;
  std::optional<Target> unitTarget;
  bool anyI64 = false; // a kernel of i64 values needs i64Preamble()
  // Each program's records are copied, then renamed and given the image.
  std::vector<std::shared_ptr<CompileDetail>> details;
  std::vector<std::shared_ptr<const CompileDetail>> saved; // the records before renaming
  for (size_t p = 0; p < programs.size(); ++p) {
    CompiledGraph &c = *programs[p];
    saved.push_back(c.detail);
    assert((!target || *target == c.target) && "one target for the batch");
    target = c.target;
    details.push_back(std::make_shared<CompileDetail>(*c.detail));
    c.detail = details.back();
    for (size_t k = 0; k < details.back()->kernels.size(); ++k) {
      CompiledKernel &ck = details.back()->kernels[k];
      wgmmas.merge(hopperPieces(ck.lowered, ck.schedule));
      anyI64 |= holdsI64(ck.lowered);
      if (ck.target != c.target)
        unitTarget = ck.target;
      std::string name = ck.name + "_p" + std::to_string(p);
      unit += renameIdentifier(ck.cuda, ck.name, name) + "\n";
      ck.name = name;
      c.program.kernels[k].name = name;
      if (first.empty())
        first = name;
    }
  }
  if (first.empty())
    return;
  unit = mutatePreamble(cudaPreamble() + (anyI64 ? i64Preamble() : std::string()) +
                        hopperPreamble(wgmmas)) +
         "\n" + unit;
  NvrtcOutput out;
  try {
    out = compileWithNvrtc(unit, first, unitTarget.value_or(*target), nvrtcOptions);
  } catch (...) {
    // As they were, so that each can be compiled again on its own.
    for (size_t p = 0; p < programs.size(); ++p) {
      programs[p]->detail = saved[p];
      for (size_t k = 0; k < saved[p]->kernels.size(); ++k)
        programs[p]->program.kernels[k].name = saved[p]->kernels[k].name;
    }
    throw;
  }
  for (size_t p = 0; p < programs.size(); ++p)
    for (size_t k = 0; k < details[p]->kernels.size(); ++k) {
      CompiledGraph *c = programs[p];
      details[p]->kernels[k].origin = CachedKernel::From::Compiled;
      details[p]->kernels[k].target = unitTarget.value_or(*target); // the image's target
      c->program.kernels[k].arch = details[p]->kernels[k].target.name();
      c->program.kernels[k].cubin = out.cubin;
      c->program.kernels[k].ptx = out.ptx;
      c->program.kernels[k].resources = out.resources;
    }
}

} // namespace minijit
