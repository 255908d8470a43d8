//===- ir/Op.cpp - op kinds and their static properties -------------------===//
#include "ir/Op.h"

#include "llvm/ADT/StringRef.h"

#include <limits>

namespace minijit {

namespace {
// The words of Ops.def's columns.
namespace columns {
using enum OpProp;
using enum OpKind; // a Combiner names an op
constexpr bool BoolResult = true;
constexpr bool Same = false;
constexpr double Inf = std::numeric_limits<double>::infinity();
constexpr double Special = std::numeric_limits<double>::quiet_NaN();
constexpr std::optional<double> NoIdentity;
constexpr std::optional<OpKind> NoCombiner;

constexpr OpInfo kOpInfos[] = {
#define MJ_OP(Enum, Spelling, Class, Operands, Result, Gradient, Props, Weight, Identity, Combiner, \
              Cuda, CudaFast, Ulps, UlpsFast)                                                   \
  {Spelling, OpClass::Class, OperandTypes::Operands, Result, GradientKind::Gradient, Props, Weight, \
   std::optional<double>(Identity), std::optional<OpKind>(Combiner), Cuda, CudaFast, Ulps, UlpsFast},
#include "ir/Ops.def"
};
} // namespace columns
using columns::kOpInfos;
} // namespace

const OpInfo &opInfo(OpKind op) { return kOpInfos[static_cast<unsigned>(op)]; }

bool isElementwise(OpKind op) {
  switch (opClass(op)) {
  case OpClass::Unary:
  case OpClass::Binary:
  case OpClass::Select:
  case OpClass::Cast:
    return true;
  case OpClass::Input:
  case OpClass::Constant:
  case OpClass::Iota:
  case OpClass::Concat:
  case OpClass::Gather:
  case OpClass::Scan:
  case OpClass::Reduce:
  case OpClass::View:
  case OpClass::Matmul:
  case OpClass::Random:
  case OpClass::Derivative:
    return false;
  }
  return false;
}

std::optional<OpKind> parseOpName(std::string_view s) {
  for (unsigned i = 0; i < kNumOps; ++i) {
    auto op = static_cast<OpKind>(i);
    if (op == OpKind::Input || op == OpKind::Constant)
      continue;
    if (kOpInfos[i].spelling == s)
      return op;
  }
  return std::nullopt;
}

std::string_view suggestOpName(std::string_view s) {
  std::string_view best;
  unsigned bestDist = 3; // suggest only names within two edits
  for (unsigned i = 0; i < kNumOps; ++i) {
    auto op = static_cast<OpKind>(i);
    if (op == OpKind::Input || op == OpKind::Constant)
      continue;
    unsigned d = llvm::StringRef(s).edit_distance(kOpInfos[i].spelling, true, bestDist);
    if (d < bestDist) {
      bestDist = d;
      best = kOpInfos[i].spelling;
    }
  }
  return best;
}

} // namespace minijit
