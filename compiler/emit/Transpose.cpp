//===- compiler/emit/Transpose.cpp - pointwise work through shared tiles ---===//
// A block covers a 32 x 32 tile of the domain over the transposed loads'
// contiguous axis (`ca`) and the innermost axis (`cc`), 8 rows at a time.
// First its threads read the transposed operands along `ca`, a warp's loads
// contiguous, into shared memory (rows padded by one word, so that reading
// a column back hits 32 banks); then each thread does the element work along
// `cc`, its stores contiguous, taking those operands from the tiles.
//===----------------------------------------------------------------------===//
#include "compiler/emit/KernelEmitter.h"

#include "compiler/emit/ExprEmitter.h"

namespace minijit {

namespace {

/// The element index of the domain as the tile's coordinates make it:
/// ca * stride(axis) + cc + the other axes' coordinates from `outer`.
IndexExpr elementAt(IndexContext &ctx, const LoweredKernel &k, const TransposeSchedule &s) {
  const Shape &d = k.domain;
  int rank = static_cast<int>(d.rank());
  auto strides = d.strides();
  IndexExpr ca = ctx.var("ca", s.a), cc = ctx.var("cc", s.c), outer = ctx.var("outer", s.outer);
  IndexExpr i = ctx.add(ctx.mul(ca, strides[s.axis]), cc);
  // `outer` runs over the other axes in row-major order
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

} // namespace

void emitTranspose(KernelEmitter &e, const TransposeSchedule &s) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  const std::string &Idx = e.Idx;
  std::string t = std::to_string(s.tile), rows = std::to_string(s.rowsPerPass);
  std::map<int, std::string> tiles;
  for (int v : s.tiled) {
    const KParam &p = k.params[k.values[v].param];
    std::string name = w.unique("mj_tile_" + p.name);
    tiles[v] = name;
    w.line("__shared__ " + regType(p.dtype) + " " + name + "[" + t + "][" + t + " + 1]; // %" +
           k.values[v].name + ", a tile read along axis " + std::to_string(s.axis));
  }
  w.line("const int tx = threadIdx.x % " + t + ", ty = threadIdx.x / " + t + ";");
  std::string tilesC = std::to_string(s.tilesC), tilesAC = std::to_string(s.tilesA * s.tilesC);
  w.line("const " + Idx + " tc = blockIdx.x % " + tilesC + "; // the tile along the innermost axis");
  w.line("const " + Idx + " ta = blockIdx.x / " + tilesC + " % " + std::to_string(s.tilesA) +
         "; // the tile along axis " + std::to_string(s.axis));
  if (s.outer > 1)
    w.line("const " + Idx + " outer = blockIdx.x / " + tilesAC + "; // the other axes");
  IndexExpr at = elementAt(e.Ctx, k, s);
  bool exact = s.a % s.tile == 0 && s.c % s.tile == 0;
  std::string guard = "if (ca < " + std::to_string(s.a) + " && cc < " + std::to_string(s.c) + ")";
  LaneCtx lc;
  lc.vec = 1;
  lc.x = k.elem;
  lc.extent = k.numel;
  lc.var = "i";
  lc.xIs = at;

  w.line("// the transposed operands' tiles, read along axis " + std::to_string(s.axis));
  w.line("#pragma unroll");
  w.open("for (int r = ty; r < " + t + "; r += " + rows + ")");
  w.line("const " + Idx + " ca = ta * " + t + " + tx, cc = tc * " + t + " + r;");
  if (!exact)
    w.open(guard);
  for (int v : s.tiled) {
    const KValue &val = k.values[v];
    const KParam &p = k.params[val.param];
    w.line(tiles[v] + "[r][tx] = " +
           loadConv(p.dtype, p.name + "[" + e.idx(e.offsetIn(val.offset, lc)) + "]") + ";");
  }
  if (!exact)
    w.close();
  w.close();
  w.line("__syncthreads();");

  w.line("// the element work, along the innermost axis");
  for (int v : s.tiled)
    lc.readFrom[v] = tiles[v] + "[tx][r]";
  w.line("#pragma unroll");
  w.open("for (int r = ty; r < " + t + "; r += " + rows + ")");
  w.line("const " + Idx + " ca = ta * " + t + " + r, cc = tc * " + t + " + tx;");
  if (!exact)
    w.open(guard);
  e.elementWork(0, lc, "");
  if (!exact)
    w.close();
  w.close();
  w.raw("}\n");
}

} // namespace minijit
