//===- compiler/lower/NamedExtent.h - one kernel text per bucket of sizes -*- C++ -*-===//
// A kernel whose outer extent has named sizes (a batch B) can serve every size
// of the bucket of B with one text, when the names only count its rows.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"

#include "llvm/ADT/ArrayRef.h"

#include <optional>

namespace minijit {

/// The kernel's outer extent `extent` as symbolic, when it has names and they
/// only count rows: named dimensions lead the domain and every buffer the
/// kernel reads or writes (`params`), so no stride or row length depends on
/// them and a schedule chosen for a larger size of the bucket is valid for
/// this one. nullopt: the kernel is compiled for the sizes bound.
std::optional<KSymbolic> symbolicExtent(const Graph &g, const KernelGroup &kernel,
                                        llvm::ArrayRef<KParam> params, const Dim &extent);

} // namespace minijit
