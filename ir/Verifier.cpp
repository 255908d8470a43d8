//===- ir/Verifier.cpp - whole-graph checks --------------------------------===//
#include "ir/Verifier.h"

#include "ir/Error.h"
#include "ir/Printer.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit {

void verifyGraph(const Graph &g) {
  if (g.outputs().empty())
    throw GraphError(llvm::formatv("graph '{0}' has no outputs", g.name()).str());
  // Rebuild the graph node by node: Graph::add re-runs every check and infers
  // the type, which must equal the recorded one.
  Graph copy(g.name());
  for (size_t i = 0; i < g.size(); ++i) {
    const Node &n = g.nodes()[i];
    for (ValueId o : n.operands)
      if (o < 0 || static_cast<size_t>(o) >= i)
        throw GraphError(llvm::formatv("%{0}: operand {1} is not defined before its use", n.name, o)
                             .str());
    NodeSpec s = specOf(n);
    ValueId id = copy.add(s);
    const Node &c = copy.node(id);
    if (c.dtype != n.dtype || c.shape != n.shape)
      throw GraphError(llvm::formatv("%{0}: recorded type {1} differs from the inferred {2}",
                                     n.name, typeText(n.dtype, n.shape), typeText(c.dtype, c.shape))
                           .str());
  }
  for (ValueId o : g.outputs())
    if (o < 0 || static_cast<size_t>(o) >= g.size())
      throw GraphError(llvm::formatv("graph '{0}': output {1} is not a value", g.name(), o).str());
}

} // namespace minijit
