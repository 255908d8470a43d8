//===- ir/Shape.cpp - static tensor shapes and broadcasting ---------------===//
#include "ir/Shape.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"

namespace minijit {

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : Dims)
    n *= d;
  return n;
}

std::vector<int64_t> Shape::strides() const {
  std::vector<int64_t> s(Dims.size(), 1);
  for (int i = static_cast<int>(Dims.size()) - 2; i >= 0; --i)
    s[i] = s[i + 1] * Dims[i + 1];
  return s;
}

std::string Shape::str() const {
  std::string s = "[";
  for (unsigned i = 0; i < Dims.size(); ++i) {
    if (i)
      s += ", ";
    s += std::to_string(Dims[i]);
  }
  return s + "]";
}

void checkShape(const Shape &s, std::string_view what) {
  if (s.rank() > kMaxRank)
    throw GraphError(llvm::formatv("{0}: rank {1} exceeds the maximum of {2}", what, s.rank(),
                                   kMaxRank)
                         .str());
  int64_t n = 1;
  for (unsigned i = 0; i < s.rank(); ++i) {
    if (s[i] < 1)
      throw GraphError(llvm::formatv("{0}: dimension {1} of {2} is {3}; dimensions must be at "
                                     "least 1",
                                     what, i, s.str(), s[i])
                           .str());
    if (s[i] > kMaxElements || n > kMaxElements / s[i])
      throw GraphError(llvm::formatv("{0}: shape {1} has more than 2^40 elements, the largest "
                                     "tensor minijit accepts",
                                     what, s.str())
                           .str());
    n *= s[i];
  }
}

Shape broadcastShapes(const Shape &a, const Shape &b, std::string_view op) {
  unsigned rank = std::max(a.rank(), b.rank());
  std::vector<int64_t> out(rank);
  for (unsigned i = 0; i < rank; ++i) {
    int ia = static_cast<int>(i) - static_cast<int>(rank - a.rank());
    int ib = static_cast<int>(i) - static_cast<int>(rank - b.rank());
    int64_t da = ia >= 0 ? a[ia] : 1;
    int64_t db = ib >= 0 ? b[ib] : 1;
    if (da != db && da != 1 && db != 1)
      throw GraphError(llvm::formatv("{0}: shapes {1} and {2} do not broadcast (dim {3}: {4} vs "
                                     "{5})",
                                     op, a.str(), b.str(), i, da, db)
                           .str());
    out[i] = da == 1 ? db : da;
  }
  return Shape(out);
}

bool broadcastsTo(const Shape &from, const Shape &to) {
  if (from.rank() > to.rank())
    return false;
  unsigned off = to.rank() - from.rank();
  for (unsigned i = 0; i < from.rank(); ++i)
    if (from[i] != 1 && from[i] != to[off + i])
      return false;
  return true;
}

} // namespace minijit
