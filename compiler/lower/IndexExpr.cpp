//===- compiler/lower/IndexExpr.cpp - symbolic index arithmetic -----------------===//
#include "compiler/lower/IndexExpr.h"

#include <algorithm>
#include <cassert>
#include <numeric>
#include <optional>

namespace minijit {

IndexExpr IndexExpr::constant(int64_t c) {
  IndexExpr e;
  e.C = c;
  return e;
}

std::string IndexExpr::key() const {
  std::string s = std::to_string(C);
  for (auto [a, k] : Terms)
    s += "+" + std::to_string(k) + "*a" + std::to_string(a);
  return s;
}

std::string IndexContext::atomKey(const Atom &a) const {
  switch (a.kind) {
  case AtomKind::Var: return "v:" + a.name + ":" + std::to_string(a.d);
  case AtomKind::Div: return "div(" + a.arg.key() + "," + std::to_string(a.d) + ")";
  case AtomKind::Mod: return "mod(" + a.arg.key() + "," + std::to_string(a.d) + ")";
  case AtomKind::Clamp: return "clamp(" + a.arg.key() + "," + std::to_string(a.d) + ")";
  case AtomKind::Value: return "value:" + std::to_string(a.d);
  }
  return "";
}

int IndexContext::intern(Atom a) {
  std::string k = atomKey(a);
  auto it = AtomIds.find(k);
  if (it != AtomIds.end())
    return it->second;
  int id = static_cast<int>(Atoms.size());
  Atoms.push_back(std::move(a));
  AtomIds[k] = id;
  return id;
}

IndexExpr IndexContext::atomExpr(int id) {
  IndexExpr e;
  e.Terms.push_back({id, 1});
  return e;
}

IndexExpr IndexContext::var(const std::string &name, int64_t size) {
  assert(size >= 1 && "a loop variable has a positive extent");
  Atom a;
  a.kind = AtomKind::Var;
  a.name = name;
  a.d = size;
  a.lo = 0;
  a.hi = size - 1;
  return atomExpr(intern(std::move(a)));
}

std::pair<int64_t, int64_t> IndexContext::range(const IndexExpr &e) const {
  int64_t lo = e.C, hi = e.C;
  for (auto [a, k] : e.Terms) {
    const Atom &at = Atoms[a];
    if (k >= 0) {
      lo += k * at.lo;
      hi += k * at.hi;
    } else {
      lo += k * at.hi;
      hi += k * at.lo;
    }
  }
  return {lo, hi};
}

IndexExpr IndexContext::normalize(IndexExpr e) {
  // Sort, merge equal atoms, drop zero coefficients.
  std::sort(e.Terms.begin(), e.Terms.end());
  llvm::SmallVector<std::pair<int, int64_t>, 4> merged;
  for (auto t : e.Terms) {
    if (!merged.empty() && merged.back().first == t.first)
      merged.back().second += t.second;
    else
      merged.push_back(t);
  }
  llvm::erase_if(merged, [](auto t) { return t.second == 0; });
  e.Terms = merged;
  // Recombine  k*d*(X / d) + k*(X % d)  into  k*X.
  for (size_t i = 0; i < e.Terms.size(); ++i) {
    int mi = e.Terms[i].first;
    int64_t mk = e.Terms[i].second;
    const Atom &m = Atoms[mi];
    if (m.kind != AtomKind::Mod)
      continue;
    // The partner is X / d, or, when X is itself Y / a, the merged Y / (a*d).
    llvm::SmallVector<std::string, 2> keys;
    Atom probe;
    probe.kind = AtomKind::Div;
    probe.arg = m.arg;
    probe.d = m.d;
    keys.push_back(atomKey(probe));
    if (m.arg.C == 0 && m.arg.Terms.size() == 1 && m.arg.Terms[0].second == 1 &&
        Atoms[m.arg.Terms[0].first].kind == AtomKind::Div) {
      const Atom &inner = Atoms[m.arg.Terms[0].first];
      Atom merged;
      merged.kind = AtomKind::Div;
      merged.arg = inner.arg;
      merged.d = inner.d * m.d;
      keys.push_back(atomKey(merged));
    }
    int di = -1;
    for (const std::string &key : keys) {
      auto it = AtomIds.find(key);
      if (it == AtomIds.end())
        continue;
      int cand = it->second;
      auto dt = llvm::find_if(e.Terms, [&](auto t) { return t.first == cand; });
      if (dt != e.Terms.end() && dt->second == mk * m.d)
        di = cand;
    }
    if (di < 0)
      continue;
    IndexExpr rest = e;
    llvm::erase_if(rest.Terms, [&](auto t) { return t.first == mi || t.first == di; });
    IndexExpr x = m.arg;
    return add(rest, mul(x, mk));
  }
  return e;
}

IndexExpr IndexContext::add(const IndexExpr &a, const IndexExpr &b) {
  IndexExpr e = a;
  e.C += b.C;
  e.Terms.append(b.Terms.begin(), b.Terms.end());
  return normalize(std::move(e));
}

IndexExpr IndexContext::mul(const IndexExpr &a, int64_t k) {
  IndexExpr e = a;
  e.C *= k;
  for (auto &t : e.Terms)
    t.second *= k;
  return normalize(std::move(e));
}

IndexExpr IndexContext::div(const IndexExpr &a, int64_t d) {
  assert(d >= 1 && "division by a positive constant");
  if (d == 1)
    return a;
  auto [lo, hi] = range(a);
  if (lo >= 0 && hi < d)
    return IndexExpr::constant(0);
  // (g*X) / (g*e) = X / e: a reshape's flat index 768*m over the 393216
  // elements of [512, 768] is m / 512, which a remainder then meets.
  if (int64_t g = std::gcd(commonFactor(a), d); g > 1)
    return div(dividedBy(a, g), d / g);
  // a = d*Q + R: floor(a/d) = Q + floor(R/d) for integers.
  IndexExpr q, r;
  int64_t qc = a.C / d, rc = a.C % d;
  if (rc < 0) {
    rc += d;
    --qc;
  }
  q.C = qc;
  r.C = rc;
  for (auto t : a.Terms) {
    if (t.second % d == 0)
      q.Terms.push_back({t.first, t.second / d});
    else
      r.Terms.push_back(t);
  }
  auto [rlo, rhi] = range(r);
  if (rlo >= 0 && rhi < d)
    return normalize(q);
  if (rlo < 0) { // not expected for indices; keep the division whole
    Atom at;
    at.kind = AtomKind::Div;
    at.arg = a;
    at.d = d;
    at.lo = lo / d;
    at.hi = hi / d;
    return atomExpr(intern(std::move(at)));
  }
  IndexExpr big, small;
  if (splitSmallTerm(r, d, big, small))
    return add(q, div(big, d));
  // (X / a) / b = X / (a*b)
  if (r.C == 0 && r.Terms.size() == 1 && r.Terms[0].second == 1 &&
      Atoms[r.Terms[0].first].kind == AtomKind::Div) {
    const Atom &inner = Atoms[r.Terms[0].first];
    IndexExpr x = inner.arg;
    return add(q, div(x, inner.d * d));
  }
  Atom at;
  at.kind = AtomKind::Div;
  at.arg = r;
  at.d = d;
  at.lo = rlo / d;
  at.hi = rhi / d;
  return add(q, atomExpr(intern(std::move(at))));
}

bool IndexContext::splitSmallTerm(const IndexExpr &e, int64_t d, IndexExpr &a, IndexExpr &j) {
  // Try each term as J (with the constant's remainder), the rest as A; last,
  // try the constant's remainder alone as J.
  for (size_t t = 0; t <= e.Terms.size(); ++t) {
    IndexExpr rest;
    for (size_t u = 0; u < e.Terms.size(); ++u)
      if (u != t)
        rest.Terms.push_back(e.Terms[u]);
    int64_t g = divisibility(rest);
    if (g <= 1)
      continue;
    g = std::gcd(g, d);
    if (g <= 1)
      continue;
    IndexExpr small;
    if (t < e.Terms.size())
      small.Terms.push_back(e.Terms[t]);
    small.C = ((e.C % g) + g) % g;
    rest.C = e.C - small.C;
    if (small.Terms.empty() && small.C == 0)
      continue; // nothing split off
    auto [lo, hi] = range(small);
    if (lo < 0 || hi >= g || d % g != 0)
      continue;
    a = rest;
    j = small;
    return true;
  }
  return false;
}

int64_t IndexContext::commonFactor(const IndexExpr &e) {
  int64_t g = e.C < 0 ? -e.C : e.C;
  for (auto [at, k] : e.Terms)
    g = std::gcd(g, k < 0 ? -k : k);
  return g;
}

IndexExpr IndexContext::dividedBy(IndexExpr e, int64_t g) {
  e.C /= g;
  for (auto &t : e.Terms)
    t.second /= g;
  return e;
}

int64_t IndexContext::divisibility(const IndexExpr &e) const {
  int64_t g = e.C < 0 ? -e.C : e.C;
  for (auto [at, k] : e.Terms)
    g = std::gcd(g, (k < 0 ? -k : k) * Atoms[at].mult);
  return g;
}

IndexExpr IndexContext::mod(const IndexExpr &a, int64_t d) {
  assert(d >= 1 && "remainder by a positive constant");
  if (d == 1)
    return IndexExpr::constant(0);
  auto [lo, hi] = range(a);
  if (lo >= 0 && hi < d)
    return a;
  // (g*X) % (g*e) = g * (X % e)
  if (int64_t g = std::gcd(commonFactor(a), d); g > 1)
    return mul(mod(dividedBy(a, g), d / g), g);
  IndexExpr r;
  r.C = ((a.C % d) + d) % d;
  for (auto t : a.Terms)
    if (t.second % d != 0)
      r.Terms.push_back(t);
  auto [rlo, rhi] = range(r);
  if (rlo >= 0 && rhi < d)
    return normalize(r);
  if (rlo < 0)
    r = a;
  IndexExpr big, small;
  if (rlo >= 0 && splitSmallTerm(r, d, big, small))
    return add(mod(big, d), small);
  Atom at;
  at.kind = AtomKind::Mod;
  at.arg = r;
  at.d = d;
  at.lo = 0;
  at.hi = std::min(d - 1, std::max<int64_t>(0, range(r).second));
  at.mult = std::gcd(divisibility(r), d);
  if (at.mult == 0)
    at.mult = 1;
  return atomExpr(intern(std::move(at)));
}

IndexExpr IndexContext::clamp(const IndexExpr &a, int64_t hi) {
  assert(hi >= 0 && "a clamp into a non-empty range");
  auto [lo, up] = range(a);
  if (lo >= 0 && up <= hi)
    return a;
  if (up <= 0)
    return IndexExpr::constant(0);
  if (lo >= hi)
    return IndexExpr::constant(hi);
  Atom at;
  at.kind = AtomKind::Clamp;
  at.arg = a;
  at.d = hi;
  at.lo = std::max<int64_t>(0, lo);
  at.hi = std::min(hi, up);
  return atomExpr(intern(std::move(at)));
}

std::vector<IndexContext::ClampTerm> IndexContext::clampTerms(const IndexExpr &e) const {
  std::vector<ClampTerm> out;
  for (auto [a, k] : e.Terms)
    if (Atoms[a].kind == AtomKind::Clamp)
      out.push_back({Atoms[a].arg, Atoms[a].d, k});
  return out;
}

IndexExpr IndexContext::value(int value) {
  Atom at;
  at.kind = AtomKind::Value;
  at.d = value;
  at.lo = -2147483648LL;
  at.hi = 2147483647LL;
  return atomExpr(intern(std::move(at)));
}

std::vector<int> IndexContext::valuesIn(const IndexExpr &e) const {
  std::vector<int> out;
  for (auto [a, k] : e.Terms) {
    const Atom &at = Atoms[a];
    if (at.kind == AtomKind::Value && !llvm::is_contained(out, at.d))
      out.push_back(static_cast<int>(at.d));
    if (at.kind != AtomKind::Var && at.kind != AtomKind::Value)
      for (int v : valuesIn(at.arg))
        if (!llvm::is_contained(out, v))
          out.push_back(v);
  }
  return out;
}

bool IndexContext::isAffine(const IndexExpr &e) const {
  return llvm::all_of(e.Terms, [&](auto t) { return Atoms[t.first].kind == AtomKind::Var; });
}

int64_t IndexContext::coefficient(const IndexExpr &e, const IndexExpr &v) const {
  assert(v.Terms.size() == 1 && "a variable");
  int id = v.Terms[0].first;
  for (auto [a, k] : e.Terms)
    if (a == id)
      return k;
  return 0;
}

bool IndexContext::mentions(const IndexExpr &e, const IndexExpr &v) const {
  int id = v.Terms[0].first;
  for (auto [a, k] : e.Terms) {
    if (a == id)
      return true;
    const Atom &at = Atoms[a];
    if (at.kind != AtomKind::Var && mentions(at.arg, v))
      return true;
  }
  return false;
}

IndexExpr IndexContext::substitute(
    const IndexExpr &e, const std::function<std::optional<IndexExpr>(const std::string &)> &f) {
  IndexExpr out = IndexExpr::constant(e.C);
  for (auto [a, k] : e.Terms) {
    Atom at = Atoms[a];
    IndexExpr t;
    switch (at.kind) {
    case AtomKind::Var: {
      std::optional<IndexExpr> r = f(at.name);
      t = r ? *r : atomExpr(a);
      break;
    }
    case AtomKind::Div: t = div(substitute(at.arg, f), at.d); break;
    case AtomKind::Mod: t = mod(substitute(at.arg, f), at.d); break;
    case AtomKind::Clamp: t = clamp(substitute(at.arg, f), at.d); break;
    case AtomKind::Value: t = atomExpr(a); break;
    }
    out = add(out, mul(t, k));
  }
  return out;
}

std::string IndexContext::atomStr(int id) const {
  const Atom &a = Atoms[id];
  // The dividend needs parentheses unless it is a plain variable.
  bool plain = a.arg.C == 0 && a.arg.Terms.size() == 1 && a.arg.Terms[0].second == 1 &&
               Atoms[a.arg.Terms[0].first].kind == AtomKind::Var;
  std::string arg = plain ? str(a.arg) : "(" + str(a.arg) + ")";
  switch (a.kind) {
  case AtomKind::Var: return a.name;
  case AtomKind::Div: return arg + " / " + std::to_string(a.d);
  case AtomKind::Mod: return arg + " % " + std::to_string(a.d);
  case AtomKind::Clamp: return "mj_clamp(" + str(a.arg) + ", " + std::to_string(a.d) + ")";
  case AtomKind::Value:
    return ValueNamer ? ValueNamer(static_cast<int>(a.d)) : "v" + std::to_string(a.d);
  }
  return "";
}

std::string IndexContext::str(const IndexExpr &e) const {
  std::string s;
  for (auto [a, k] : e.Terms) {
    std::string at = atomStr(a);
    bool call = Atoms[a].kind == AtomKind::Var || Atoms[a].kind == AtomKind::Clamp ||
                Atoms[a].kind == AtomKind::Value;
    if (!call && (k != 1 || e.Terms.size() > 1 || e.C != 0))
      at = "(" + at + ")";
    std::string term = k == 1 ? at : at + " * " + std::to_string(k);
    if (k < 0)
      term = at + " * (" + std::to_string(k) + ")";
    s += s.empty() ? term : " + " + term;
  }
  if (s.empty())
    return std::to_string(e.C);
  if (e.C < 0)
    s += " - " + std::to_string(-e.C);
  else if (e.C > 0)
    s += " + " + std::to_string(e.C);
  return s;
}

} // namespace minijit
