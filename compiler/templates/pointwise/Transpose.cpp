//===- compiler/templates/pointwise/Transpose.cpp - pointwise work through shared tiles ---===//
// A block covers a tile of the domain (32 x 32 elements, or 64 x 64 moved
// as 16-byte vectors) over the transposed loads' contiguous axis (`ca`) and
// the innermost axis (`cc`). First its threads read the transposed operands
// along `ca`, a warp's loads contiguous, into shared memory (rows padded by
// one word, so that reading a column back spreads over the banks); then each
// thread does the element work along `cc`, its stores contiguous, taking
// those operands from the tiles.
//===----------------------------------------------------------------------===//
#include "compiler/templates/pointwise/PointwiseInternal.h"

#include "compiler/emit/ExprEmitter.h"

namespace minijit {

namespace {

/// The tiles moved as 16-byte vectors: `vec` positions along the axis in
/// the first phase, `vec` along the innermost axis in the second. Thread
/// `threadIdx.x` takes vectors threadIdx.x, + block, ... of the tile's
/// tile * tile / vec, `lv` the vector within its tile row, `lr` the row.
void vectorTiles(KernelEmitter &e, const TransposeSchedule &s,
                 const std::map<int, std::string> &tiles, const IndexExpr &at) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  const std::string &Idx = e.Idx;
  std::string t = std::to_string(s.tile), v = std::to_string(s.vec);
  std::string perRow = std::to_string(s.tile / s.vec);
  int64_t count = int64_t(s.tile) * s.tile / s.vec;
  std::string loop = "for (int q = threadIdx.x; q < " + std::to_string(count) + "; q += " +
                     std::to_string(s.block) + ")";
  auto rowAndVector = [&]() {
    w.line("const int lr = q / " + perRow + ", lv = q % " + perRow +
           "; // the tile's row, the vector in it");
  };
  bool exactA = s.a % s.tile == 0, exactC = s.c % s.tile == 0;
  LaneCtx lc;
  lc.vec = s.vec;
  lc.elem = k.elem;
  lc.elemIs = at;

  w.line("// the transposed operands' tiles, read along axis " + std::to_string(s.axis) + " by " +
         v + "-wide vectors");
  w.line("#pragma unroll");
  w.open(loop);
  rowAndVector();
  w.line("const " + Idx + " cav = ta * " + perRow + " + lv, cc = tc * " + t +
         " + lr; // positions cav * " + v + " .. + " + std::to_string(s.vec - 1) + " of axis " +
         std::to_string(s.axis));
  if (!exactA || !exactC)
    w.open("if (cav < " + std::to_string(s.a / s.vec) + " && cc < " + std::to_string(s.c) + ")");
  IndexExpr ca = e.Ctx.var("ca", s.a);
  for (const auto &[value, tile] : tiles) {
    const KParam &p = k.params[k.values[value].param];
    LaneAccess a = analyzeLanes(e.Ctx, e.offsetIn(k.values[value].offset, lc), ca, s.a, s.vec, "cav");
    std::string r = w.unique(p.name + "_r");
    w.line("alignas(16) " + std::string(storageCType(p.dtype)) + " " + r + "[" + v + "];");
    w.line("mj_load(" + r + ", " + p.name + " + " + e.parenIdx(a.base) + ");");
    w.line("#pragma unroll");
    w.line("for (int j = 0; j < " + v + "; ++j) " + tile + "[lr][lv * " + v + " + j] = " +
           loadConv(p.dtype, r + "[j]") + ";");
  }
  if (!exactA || !exactC)
    w.close();
  w.close();
  w.line("__syncthreads();");

  w.line("// the element work, along the innermost axis by " + v + "-wide vectors");
  for (const auto &[value, tile] : tiles)
    lc.readFrom[value] = tile + "[lv * " + v + " + j][lr]";
  lc.x = e.Ctx.var("cc", s.c);
  lc.extent = s.c;
  lc.var = "ccv";
  w.line("#pragma unroll");
  w.open(loop);
  rowAndVector();
  w.line("const " + Idx + " ccv = tc * " + perRow + " + lv, ca = ta * " + t +
         " + lr; // positions ccv * " + v + " .. + " + std::to_string(s.vec - 1) +
         " of the innermost axis");
  if (!exactA || !exactC)
    w.open("if (ccv < " + std::to_string(s.c / s.vec) + " && ca < " + std::to_string(s.a) + ")");
  e.elementWork(0, lc, "");
  if (!exactA || !exactC)
    w.close();
  w.close();
  w.raw("}\n");
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
  std::string tilesC = std::to_string(s.tilesC), tilesAC = std::to_string(s.tilesA * s.tilesC);
  w.line("const " + Idx + " tc = blockIdx.x % " + tilesC + "; // the tile along the innermost axis");
  w.line("const " + Idx + " ta = blockIdx.x / " + tilesC + " % " + std::to_string(s.tilesA) +
         "; // the tile along axis " + std::to_string(s.axis));
  if (s.outer > 1)
    w.line("const " + Idx + " outer = blockIdx.x / " + tilesAC + "; // the other axes");
  IndexExpr at = transposeElement(e.Ctx, k, s);
  bool exact = s.a % s.tile == 0 && s.c % s.tile == 0;
  std::string guard = "if (ca < " + std::to_string(s.a) + " && cc < " + std::to_string(s.c) + ")";
  if (s.vec > 1) {
    vectorTiles(e, s, tiles, at);
    return;
  }
  w.line("const int tx = threadIdx.x % " + t + ", ty = threadIdx.x / " + t + ";");
  LaneCtx lc = LaneCtx::elements("i", k.elem, k.numel);
  lc.elem = k.elem;
  lc.elemIs = at;

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
