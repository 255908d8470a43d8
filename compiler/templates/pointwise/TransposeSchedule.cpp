//===- compiler/templates/pointwise/TransposeSchedule.cpp - tiles for permuted operands ---===//
// A pointwise kernel reads each operand at an offset of the element index.
// An operand read through a permute that moves the innermost axis steps by
// its row length from one element to the next: a warp's 32 loads touch 32
// sectors, and the kernel runs at a fraction of the bandwidth. When some load
// is contiguous along another axis of the domain instead, the kernel is cut
// into tiles over that axis and the innermost one (TransposeSchedule).
// Layouts are found by evaluating the offsets at sample elements, so a
// domain whose index is split over several axes counts as well.
//===----------------------------------------------------------------------===//
#include "compiler/templates/pointwise/PointwiseInternal.h"

#include "compiler/schedule/ScheduleInternal.h"

#include <algorithm>
#include <map>

namespace minijit::detail {

namespace {

constexpr int kSamples = 16;
constexpr unsigned kTile = 32;

/// Offsets at sample elements whose coordinate along `axis` and along the
/// innermost axis can both step by one: how often `offset` steps by `step`
/// along `axis` (by `stride` elements of the flat index).
int stepsOf(IndexContext &ctx, const IndexExpr &offset, const LoweredKernel &k, int axis,
            int64_t expect) {
  const Shape &d = k.domain;
  auto strides = d.strides();
  int rank = static_cast<int>(d.rank());
  std::string elem = ctx.str(k.elem);
  int hits = 0;
  for (uint64_t s = 0; s < kSamples; ++s) {
    int64_t i = static_cast<int64_t>((s * 2654435761u) % uint64_t(k.numel));
    // keep the sample off the last position of both axes
    int64_t ca = (i / strides[axis]) % d[axis], cc = i % d[rank - 1];
    if (ca == d[axis] - 1)
      i -= strides[axis];
    if (cc == d[rank - 1] - 1)
      i -= 1;
    std::optional<int64_t> here = valueAt(ctx, offset, {{elem, i}}),
                           next = valueAt(ctx, offset, {{elem, i + strides[axis]}});
    if (here && next && *next - *here == expect)
      ++hits;
  }
  return hits;
}

/// Whether the tiles can move 16-byte vectors: the tiled loads contiguous
/// over `vec` positions of `axis`, the stores over `vec` of the innermost
/// axis, both extents whole vectors.
bool vectorsFit(const LoweredKernel &k, const TransposeSchedule &s, unsigned vec) {
  if (s.a % vec || s.c % vec || s.tile % vec)
    return false;
  IndexContext ctx = k.ctx;
  IndexExpr at = transposeElement(ctx, k, s);
  IndexExpr ca = ctx.var("ca", s.a), cc = ctx.var("cc", s.c);
  std::string elem = ctx.str(k.elem);
  auto inTile = [&](const IndexExpr &off) {
    return ctx.substitute(off, [&](const std::string &n) -> std::optional<IndexExpr> {
      if (n == elem)
        return at;
      return std::nullopt;
    });
  };
  for (int v : s.tiled)
    if (analyzeLanes(ctx, inTile(k.values[v].offset), ca, s.a, vec, "cav").kind !=
        LaneAccess::Kind::Contiguous)
      return false;
  for (const KStore &st : k.stores)
    if (analyzeLanes(ctx, inTile(st.offset), cc, s.c, vec, "ccv").kind !=
        LaneAccess::Kind::Contiguous)
      return false;
  return true;
}

} // namespace

Expected<std::optional<Schedule>> transposeSchedule(const LoweredKernel &k,
                                                    const DeviceProperties &dev,
                                                    const ScheduleOverrides &o) {
  const Shape &d = k.domain;
  int rank = static_cast<int>(d.rank());
  if (rank < 2 || d[rank - 1] < kTile / 2 || k.numel != d.numel())
    return std::nullopt;
  if (k.elementIndexed) // a gather's per-element loads follow no tile
    return std::nullopt;
  IndexContext ctx = k.ctx;
  int inner = rank - 1;
  const int most = kSamples * 3 / 4;
  // Every store steps by one along the innermost axis.
  for (const KStore &st : k.stores)
    if (stepsOf(ctx, st.offset, k, inner, 1) < most)
      return std::nullopt;
  std::vector<bool> need = neededValues(k);
  // The loads that do not step by one (or stay) along the innermost axis,
  // by the axis they step by one along.
  std::map<int, std::vector<int>> byAxis;
  std::map<int, int64_t> bytesByAxis;
  for (size_t v = 0; v < k.values.size(); ++v) {
    const KValue &val = k.values[v];
    if (!need[v] || val.kind != KValue::Kind::Load)
      continue;
    if (stepsOf(ctx, val.offset, k, inner, 1) >= most || stepsOf(ctx, val.offset, k, inner, 0) >= most)
      continue;
    for (int a = 0; a < inner; ++a) {
      if (d[a] < kTile / 2 || stepsOf(ctx, val.offset, k, a, 1) < most)
        continue;
      byAxis[a].push_back(static_cast<int>(v));
      bytesByAxis[a] += k.params[val.param].numel * dtypeSize(k.params[val.param].dtype);
      break;
    }
  }
  if (byAxis.empty())
    return std::nullopt;
  auto best = std::max_element(bytesByAxis.begin(), bytesByAxis.end(),
                               [](const auto &x, const auto &y) { return x.second < y.second; });
  TransposeSchedule s;
  s.axis = best->first;
  s.tiled = byAxis[s.axis];
  s.a = d[s.axis];
  s.c = d[inner];
  s.outer = k.numel / (s.a * s.c);
  s.tile = kTile;
  s.block = 256;
  if (o.tile) {
    if (*o.tile != 16 && *o.tile != 32 && *o.tile != 64)
      return refuse("tile must be 16, 32 or 64 for a transpose");
    s.tile = static_cast<unsigned>(*o.tile);
  }
  // 16-byte vectors where the layouts allow, in tiles of 64 unless set (a
  // vector of f16 is 8 wide: 32-wide tiles would leave threads idle).
  unsigned vec = maxVecFor(k);
  if (vec > 1 && vectorsFit(k, s, vec)) {
    s.vec = vec;
    if (!o.tile)
      s.tile = 2 * kTile;
  }
  if (o.block) {
    if (*o.block < int64_t(s.tile) / s.vec || *o.block > 1024 ||
        (int64_t(s.tile) * s.tile / s.vec) % *o.block)
      return refuse("block must divide the tile's " + std::to_string(s.tile * s.tile / s.vec) +
                    " vectors, up to 1024");
    s.block = static_cast<unsigned>(*o.block);
  }
  s.block = std::min<unsigned>(s.block, s.tile * s.tile / s.vec);
  s.rowsPerPass = s.block * s.vec / s.tile;
  int64_t shared = int64_t(s.tiled.size()) * s.tile * (s.tile + 1) * 4;
  if (shared > dev.sharedPerBlock)
    return std::nullopt;
  s.tilesA = (s.a + s.tile - 1) / s.tile;
  s.tilesC = (s.c + s.tile - 1) / s.tile;
  s.grid = s.tilesA * s.tilesC * s.outer;
  return std::optional<Schedule>(Schedule{s});
}

} // namespace minijit::detail

namespace minijit {

IndexExpr transposeElement(IndexContext &ctx, const LoweredKernel &k, const TransposeSchedule &s) {
  const Shape &d = k.domain;
  int rank = static_cast<int>(d.rank());
  auto strides = d.strides();
  IndexExpr ca = ctx.var("ca", s.a), cc = ctx.var("cc", s.c), outer = ctx.var("outer", s.outer);
  IndexExpr i = ctx.add(ctx.mul(ca, strides[s.axis]), cc);
  int64_t below = 1;
  for (int ax = rank - 2; ax >= 0; --ax) {
    if (ax == s.axis)
      continue;
    IndexExpr coord = ctx.mod(ctx.div(outer, below), d[ax]);
    i = ctx.add(i, ctx.mul(coord, strides[ax]));
    below *= d[ax];
  }
  return i;
}

} // namespace minijit
