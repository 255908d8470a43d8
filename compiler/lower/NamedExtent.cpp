//===- compiler/lower/NamedExtent.cpp - one kernel text per bucket of sizes -===//
#include "compiler/lower/NamedExtent.h"

#include "llvm/ADT/STLExtras.h"

namespace minijit {
namespace {

/// Named dimensions only ahead of numbered ones: every stride of such a
/// shape is a number, so its named sizes only count its outer rows.
bool namesLead(const Shape &s) {
  bool numbers = false;
  for (unsigned d = 0; d < s.rank(); ++d) {
    if (s.dim(d).isNamed() && numbers)
      return false;
    numbers = numbers || !s.dim(d).isNamed();
  }
  return true;
}

/// The bound value of named dimension `name`, from a dimension of the
/// graph that is exactly that name.
std::optional<int64_t> boundSize(const Graph &g, const std::string &name) {
  for (const Node &n : g.nodes())
    for (unsigned d = 0; d < n.shape.rank(); ++d) {
      Dim dim = n.shape.dim(d);
      if (dim.isNamed() && dim.expr().coef == 1 && dim.expr().names.size() == 1 &&
          dim.expr().names[0] == name)
        return dim.size();
    }
  return std::nullopt;
}

} // namespace

std::optional<KSymbolic> symbolicExtent(const Graph &g, const KernelGroup &kernel,
                                        llvm::ArrayRef<KParam> params, const Dim &extent) {
  if (!extent.isNamed() || !namesLead(kernel.domain))
    return std::nullopt;
  if (kernel.kind != KernelKind::Matmul)
    for (unsigned d = 0; d < kernel.domain.rank(); ++d)
      if (kernel.domain.dim(d).isNamed() && llvm::is_contained(kernel.reducedAxes, d))
        return std::nullopt; // a named row length
  for (const KParam &p : params)
    if (!namesLead(g.node(p.node).shape))
      return std::nullopt;
  KSymbolic s;
  s.extent = extent.expr();
  for (const std::string &n : s.extent.names)
    if (!llvm::is_contained(s.names, n))
      s.names.push_back(n);
  for (const std::string &n : s.names) {
    std::optional<int64_t> v = boundSize(g, n);
    if (!v)
      return std::nullopt; // no dimension of the graph is that name alone: compiled for its value
    s.values.push_back(*v);
  }
  return s;
}

} // namespace minijit
