//===- bench/GeneralSuite.h - graphs nobody tuned for -----------*- C++ -*-===//
// The generalization suite (minijit_bench --suite general): graphs as users
// write them, at shapes the schedules' rules were not fitted to: permuted
// operands, reductions over middle, leading and non-adjacent axes, batched
// rows with broadcast masks, short, odd and very long rows, whole-tensor
// reductions that feed the tensor again, column reductions, f16 and bf16, two
// outputs, and matmuls of every shape class (nn.Linear's layout, GEMV and
// GEVM, irregular sizes, few rows, a sum of a product). bench/torch_general.py
// times the same graphs (same names) in PyTorch eager and torch.compile.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <functional>
#include <string>
#include <vector>

namespace minijit::bench {

struct GeneralWorkload {
  std::string name;
  std::function<Graph()> build;
  bool checkable = true; ///< small enough for the CPU reference
};

std::vector<GeneralWorkload> generalWorkloads();

} // namespace minijit::bench
