//===- compiler/lower/FuseAndLower.cpp - fusion with lowering as its check -===//
#include "compiler/lower/FuseAndLower.h"

#include <variant>

namespace minijit {

FusedGraph fuseAndLower(const Graph &g, bool fusion, const LoweringOptions &options) {
  FusedGraph fused;
  // Each round lowers every kernel of the plan fusion formed; the last round,
  // the one that needs no store, leaves its kernels in `fused`.
  auto lowerAll = [&](const FusionPlan &plan) -> std::optional<StoreRequest> {
    fused.kernels.clear();
    for (size_t k = 0; k < plan.kernels.size(); ++k) {
      LoweringResult r = lowerKernel(g, plan, static_cast<int>(k), options);
      if (auto *store = std::get_if<StoreRequest>(&r))
        return *store;
      fused.kernels.push_back(std::move(std::get<LoweredKernel>(r)));
    }
    return std::nullopt;
  };
  fused.plan = formPlan(g, fusion, lowerAll);
  return fused;
}

FusionPlan fuseGraph(const Graph &g, bool fusion) { return fuseAndLower(g, fusion).plan; }

} // namespace minijit
