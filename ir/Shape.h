//===- ir/Shape.h - static tensor shapes and broadcasting ------*- C++ -*-===//
// Shapes are static: rank 0 (a scalar) to kMaxRank, every dimension at least 1,
// at most kMaxElements elements (ir/Limits.h).
// Broadcasting follows numpy: align on the right, a 1 stretches.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Limits.h"

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace minijit {

class Shape {
public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims) : Dims(dims) {}
  explicit Shape(std::span<const int64_t> dims) : Dims(dims.begin(), dims.end()) {}

  unsigned rank() const { return Dims.size(); }
  int64_t operator[](unsigned i) const { return Dims[i]; }
  int64_t &operator[](unsigned i) { return Dims[i]; }
  const std::vector<int64_t> &dims() const { return Dims; }
  /// Product of the dimensions (1 for a scalar).
  int64_t numel() const;
  /// Row-major element strides: the last dimension has stride 1.
  std::vector<int64_t> strides() const;
  /// "[4096, 1024]", "[]" for a scalar.
  std::string str() const;

  bool operator==(const Shape &o) const { return Dims == o.Dims; }
  bool operator!=(const Shape &o) const { return !(*this == o); }

private:
  std::vector<int64_t> Dims;
};

/// Checks rank, positive dimensions and the element limit; throws GraphError
/// naming `what` otherwise.
void checkShape(const Shape &s, std::string_view what);

/// The numpy broadcast of two shapes; throws GraphError
/// "OP: shapes [a] and [b] do not broadcast (dim D: X vs Y)".
Shape broadcastShapes(const Shape &a, const Shape &b, std::string_view op);

/// True when `from` broadcasts to exactly `to` (numpy rules).
bool broadcastsTo(const Shape &from, const Shape &to);

} // namespace minijit
