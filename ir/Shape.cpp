//===- ir/Shape.cpp - tensor shapes, named dimensions, broadcasting -------===//
#include "ir/Shape.h"

#include "ir/Error.h"

#include "llvm/Support/FormatVariadic.h"

#include <algorithm>
#include <cassert>
#include <iterator>

namespace minijit {

namespace {

/// a * b, or a value past kMaxElements when the product overflows (so that
/// checkShape rejects it).
int64_t mulSaturated(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r))
    return kMaxElements + 1;
  return r;
}

} // namespace

std::string DimExpr::str() const {
  if (names.empty())
    return std::to_string(coef);
  std::string s = coef == 1 ? "" : std::to_string(coef) + "*";
  for (size_t i = 0; i < names.size(); ++i)
    s += (i ? "*" : "") + names[i];
  return s;
}

int64_t DimExpr::evaluate(const std::map<std::string, int64_t> &sizes) const {
  int64_t v = coef;
  for (const std::string &n : names) {
    auto it = sizes.find(n);
    if (it == sizes.end() || it->second < 0)
      return kUnboundSize;
    v = mulSaturated(v, it->second);
  }
  return v;
}

DimExpr operator*(const DimExpr &a, const DimExpr &b) {
  DimExpr r;
  r.coef = mulSaturated(a.coef, b.coef);
  r.names = a.names;
  r.names.insert(r.names.end(), b.names.begin(), b.names.end());
  std::sort(r.names.begin(), r.names.end());
  return r;
}

bool isDimName(std::string_view name) {
  if (name.empty() || (name[0] >= '0' && name[0] <= '9'))
    return false;
  return std::all_of(name.begin(), name.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
  });
}

Dim::Dim(std::string_view name) : Size(kUnboundSize), Expr{1, {std::string(name)}} {
  if (!isDimName(name))
    throw GraphError(llvm::formatv("'{0}' is not a valid dimension name (a letter or '_', then "
                                   "letters, digits and '_')",
                                   name)
                         .str());
}

std::string Dim::str() const { return isNamed() ? Expr.str() : std::to_string(Size); }

Dim operator*(const Dim &a, const Dim &b) {
  int64_t size = a.isBound() && b.isBound() ? mulSaturated(a.size(), b.size()) : kUnboundSize;
  return Dim(a.Expr * b.Expr, size);
}

Shape::Shape(std::initializer_list<Dim> dims)
    : Shape(std::span<const Dim>(dims.begin(), dims.size())) {}

Shape::Shape(std::span<const Dim> dims) {
  bool named = false;
  for (const Dim &d : dims) {
    Dims.push_back(d.size());
    named = named || d.isNamed();
  }
  if (named)
    for (const Dim &d : dims)
      Exprs.push_back(d.expr());
}

Dim Shape::dim(unsigned i) const {
  if (Exprs.empty() || Exprs[i].isNumber())
    return Dim(Dims[i]);
  return Dim(Exprs[i], Dims[i]);
}

void Shape::setDim(unsigned i, const Dim &d) {
  Dims[i] = d.size();
  if (Exprs.empty() && !d.isNamed())
    return;
  std::vector<Dim> all = allDims();
  all[i] = d;
  *this = Shape(std::span<const Dim>(all));
}

std::vector<Dim> Shape::allDims() const {
  std::vector<Dim> out;
  for (unsigned i = 0; i < rank(); ++i)
    out.push_back(dim(i));
  return out;
}

bool Shape::isBound() const {
  for (unsigned i = 0; i < rank(); ++i)
    if (!dim(i).isBound())
      return false;
  return true;
}

std::vector<std::string> Shape::names() const {
  std::vector<std::string> out;
  for (const DimExpr &e : Exprs)
    for (const std::string &n : e.names)
      if (std::find(out.begin(), out.end(), n) == out.end())
        out.push_back(n);
  std::sort(out.begin(), out.end());
  return out;
}

Dim Shape::numelDim() const {
  Dim n(int64_t(1));
  for (unsigned i = 0; i < rank(); ++i)
    n = n * dim(i);
  return n;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int64_t d : Dims) {
    if (d < 0)
      return 0;
    n *= d;
  }
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
  for (unsigned i = 0; i < rank(); ++i)
    s += (i ? ", " : "") + dim(i).str();
  return s + "]";
}

std::string Shape::boundStr() const {
  std::string s = "[";
  for (unsigned i = 0; i < rank(); ++i) {
    Dim d = dim(i);
    s += (i ? ", " : "") + d.str();
    if (d.isNamed() && d.isBound())
      s += "=" + std::to_string(d.size());
  }
  return s + "]";
}

bool Shape::operator==(const Shape &o) const {
  if (rank() != o.rank())
    return false;
  for (unsigned i = 0; i < rank(); ++i) {
    if (Dims[i] != o.Dims[i])
      return false;
    if (Dims[i] == kUnboundSize && dim(i).expr() != o.dim(i).expr())
      return false;
  }
  return true;
}

void checkShape(const Shape &s, std::string_view what) {
  if (s.rank() > kMaxRank)
    throw GraphError(llvm::formatv("{0}: rank {1} exceeds the maximum of {2}", what, s.rank(),
                                   kMaxRank)
                         .str());
  int64_t n = 1;
  for (unsigned i = 0; i < s.rank(); ++i) {
    Dim d = s.dim(i);
    if (d.isNamed() && !d.isBound())
      continue;
    if (d.size() < 0)
      throw GraphError(llvm::formatv("{0}: dimension {1} of {2} is {3}; dimensions must be at "
                                     "least 0",
                                     what, i, s.str(), d.size())
                           .str());
    if (d.size() > kMaxElements || (d.size() > 0 && n > kMaxElements / d.size()))
      throw GraphError(llvm::formatv("{0}: shape {1} has more than 2^40 elements, the largest "
                                     "tensor minijit accepts",
                                     what, s.boundStr())
                           .str());
    n *= d.size();
  }
}

bool sameDim(const Dim &a, const Dim &b) {
  if (a.isBound() && b.isBound())
    return a.size() == b.size();
  return a.isNamed() && b.isNamed() && a.expr() == b.expr();
}

bool sameNonUnitDims(std::span<const Dim> a, std::span<const Dim> b) {
  std::vector<Dim> x, y;
  std::copy_if(a.begin(), a.end(), std::back_inserter(x), [](const Dim &d) { return !isUnitDim(d); });
  std::copy_if(b.begin(), b.end(), std::back_inserter(y), [](const Dim &d) { return !isUnitDim(d); });
  return x.size() == y.size() &&
         std::equal(x.begin(), x.end(), y.begin(), [](const Dim &p, const Dim &q) {
           return sameDim(p, q);
         });
}

namespace {

/// A 1 that stretches: the number 1, or a named size bound to 1.
bool stretches(const Dim &d) { return d.isBound() && d.size() == 1; }

} // namespace

Shape broadcastShapes(const Shape &a, const Shape &b, std::string_view op) {
  unsigned rank = std::max(a.rank(), b.rank());
  std::vector<Dim> out;
  for (unsigned i = 0; i < rank; ++i) {
    int ia = static_cast<int>(i) - static_cast<int>(rank - a.rank());
    int ib = static_cast<int>(i) - static_cast<int>(rank - b.rank());
    Dim da = ia >= 0 ? a.dim(ia) : Dim(int64_t(1));
    Dim db = ib >= 0 ? b.dim(ib) : Dim(int64_t(1));
    if (sameDim(da, db)) {
      out.push_back(da.isNamed() ? da : db);
      continue;
    }
    if (stretches(da) && !(db.isNamed() && da.isNamed())) {
      out.push_back(db);
      continue;
    }
    if (stretches(db) && !(db.isNamed() && da.isNamed())) {
      out.push_back(da);
      continue;
    }
    throw GraphError(llvm::formatv("{0}: shapes {1} and {2} do not broadcast (dim {3}: {4} vs "
                                   "{5})",
                                   op, a.str(), b.str(), i, da.str(), db.str())
                         .str());
  }
  return Shape(std::span<const Dim>(out));
}

bool broadcastsTo(const Shape &from, const Shape &to) {
  if (from.rank() > to.rank())
    return false;
  unsigned off = to.rank() - from.rank();
  for (unsigned i = 0; i < from.rank(); ++i) {
    Dim f = from.dim(i), t = to.dim(off + i);
    if (!sameDim(f, t) && !(stretches(f) && !f.isNamed()) &&
        !(stretches(f) && t.isBound() && f.isBound()))
      return false;
  }
  return true;
}

Shape bindShape(const Shape &s, const DimBindings &sizes, std::string_view what) {
  if (!s.hasNames())
    return s;
  std::vector<Dim> out;
  for (unsigned i = 0; i < s.rank(); ++i) {
    Dim d = s.dim(i);
    if (!d.isNamed()) {
      out.push_back(d);
      continue;
    }
    int64_t v = d.expr().evaluate(sizes);
    if (v == kUnboundSize) {
      std::string missing;
      for (const std::string &n : d.expr().names)
        if (!sizes.count(n))
          missing = n;
      throw GraphError(llvm::formatv("{0}: the named dimension {1} has no size (give it, e.g. "
                                     "--dim {1}=N)",
                                     what, missing.empty() ? d.str() : missing)
                           .str());
    }
    out.push_back(Dim(d.expr(), v));
  }
  Shape bound{std::span<const Dim>(out)};
  checkShape(bound, what);
  return bound;
}

void matchShape(const Shape &declared, const Shape &actual, std::string_view what,
                DimBindings &sizes, std::map<std::string, std::string> &from) {
  if (declared.rank() != actual.rank())
    throw GraphError(llvm::formatv("{0}: expected rank {1} ({2}), got {3}", what, declared.rank(),
                                   declared.str(), actual.str())
                         .str());
  for (unsigned i = 0; i < declared.rank(); ++i) {
    Dim d = declared.dim(i);
    int64_t got = actual[i];
    if (!d.isNamed()) {
      if (d.size() != got)
        throw GraphError(llvm::formatv("{0}: expected {1}, got {2} (dim {3}: {4} vs {5})", what,
                                       declared.str(), actual.str(), i, d.size(), got)
                             .str());
      continue;
    }
    assert(d.expr().coef == 1 && d.expr().names.size() == 1 &&
           "an argument's named dimensions are single names");
    const std::string &name = d.expr().names[0];
    auto it = sizes.find(name);
    if (it == sizes.end()) {
      if (got < 0)
        throw GraphError(llvm::formatv("{0}: dimension {1} ({2}) is {3}; dimensions must be at "
                                       "least 0",
                                       what, i, name, got)
                             .str());
      sizes[name] = got;
      from[name] = std::string(what);
      continue;
    }
    if (it->second != got) {
      auto src = from.find(name);
      std::string origin = src == from.end() ? "as given" : "from " + src->second;
      throw GraphError(llvm::formatv("{0}: dimension {1} is {2}, which is {3} ({4}), but {0} has "
                                     "{5}",
                                     what, i, name, it->second, origin, got)
                           .str());
    }
  }
}

std::string bindingsText(const DimBindings &sizes) {
  std::string s;
  for (const auto &[name, size] : sizes)
    s += (s.empty() ? "" : ", ") + name + "=" + std::to_string(size);
  return s;
}

} // namespace minijit
