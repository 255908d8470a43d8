//===- compiler/templates/matmul/MatmulMma.cpp - f16/bf16 matmul on the tensor cores ---===//
// mma.sync m16n8k16 from fragments that ldmatrix reads out of shared memory,
// with `stages` k-slices in flight through cp.async (dynamic shared memory),
// each warp a warpsM x warpsN share of the block tile.
//===----------------------------------------------------------------------===//
#include "compiler/templates/matmul/MatmulTiles.h"

namespace minijit {

namespace {

class MmaEmitter : MatmulEmitter {
public:
  MmaEmitter(KernelEmitter &e, const MatmulMmaSchedule &s)
      : MatmulEmitter(e, s), S(s), WarpM(s.bm / s.warpsM), WarpN(s.bn / s.warpsN),
        MI(std::to_string(WarpM / 16)), NI(std::to_string(WarpN / 8)) {}

  void run() {
    prologue();
    declarations();
    W.line("// copies the k-slice starting at k0 of both tiles into stage s");
    W.open("auto loadTiles = [&](int s, " + E.Idx + " k0)");
    tileCopy(operand(true));
    tileCopy(operand(false));
    W.close("};");
    mainLoop();
    W.line("// epilogue: accumulator c of fragment (mi, ni) holds row lane/4 (+8), column "
           "2*(lane%4) (+1)");
    W.line("#pragma unroll");
    W.open("for (int mi = 0; mi < " + MI + "; ++mi)");
    W.line("#pragma unroll");
    W.open("for (int ni = 0; ni < " + NI + "; ++ni)");
    W.line("#pragma unroll");
    W.open("for (int c = 0; c < 4; ++c)");
    W.line("const " + E.Idx + " m = m0 + wm * " + std::to_string(WarpM) +
           " + mi * 16 + lane / 4 + c / 2 * 8;");
    W.line("const " + E.Idx + " n = n0 + wn * " + std::to_string(WarpN) +
           " + ni * 8 + lane % 4 * 2 + c % 2;");
    epilogue("acc[mi][ni][c]");
    W.close();
    W.close();
    W.close();
    W.raw("}\n");
  }

private:
  void declarations() {
    std::string bm = std::to_string(S.bm), bn = std::to_string(S.bn), bk = std::to_string(S.bk);
    W.line("// " + std::to_string(S.stages) +
           " stages of the A and B tiles, rows padded by 8 halves against bank conflicts");
    W.line("extern __shared__ __align__(16) unsigned char mj_smem[];");
    if (S.vecAT)
      W.line("auto As = reinterpret_cast<unsigned short (*)[" + bk + "][" + bm +
             " + 8]>(mj_smem); // A stored transposed: As[s][k][m]");
    else
      W.line("auto As = reinterpret_cast<unsigned short (*)[" + bm + "][" + bk + " + 8]>(mj_smem);");
    std::string bOffset = std::to_string(S.stages * mmaTileHalves(S, true) * 2);
    if (S.vecBT)
      W.line("auto Bs = reinterpret_cast<unsigned short (*)[" + bn + "][" + bk +
             " + 8]>(mj_smem + " + bOffset + "); // B stored transposed: Bs[s][n][k]");
    else
      W.line("auto Bs = reinterpret_cast<unsigned short (*)[" + bk + "][" + bn + " + 8]>(mj_smem + " +
             bOffset + ");");
    W.line("const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;");
    W.line("const int wm = warp / " + std::to_string(S.warpsN) + ", wn = warp % " +
           std::to_string(S.warpsN) + "; // this warp's " + std::to_string(WarpM) + "x" +
           std::to_string(WarpN) + " part of the tile");
    W.line("float acc[" + MI + "][" + NI + "][4];");
    W.line("#pragma unroll");
    W.open("for (int mi = 0; mi < " + MI + "; ++mi)");
    W.line("#pragma unroll");
    W.line("for (int ni = 0; ni < " + NI + "; ++ni) acc[mi][ni][0] = acc[mi][ni][1] = "
           "acc[mi][ni][2] = acc[mi][ni][3] = 0.0f;");
    W.close();
  }

  /// Copies one operand's k-slice at k0 into stage s: 16-byte cp.async
  /// copies that fly while the tensor cores work, or element loads.
  void tileCopy(const MatmulOperand &o) {
    std::string arr = o.name + "s[s][r][c]";
    if (o.vecT) {
      transposedTileCopy(o);
      return;
    }
    if (!o.vec) {
      W.open("for (int e = threadIdx.x; e < " + std::to_string(o.rows * o.cols) + "; e += " +
             std::to_string(S.block) + ")");
      tileElement(o, "e");
      W.line(arr + " = " + operandLoad(o, false) + ";");
      W.close();
      return;
    }
    std::string cols8 = std::to_string(o.cols / 8);
    cpAsyncLoop(o, "const int r = e / " + cols8 + ", c = e % " + cols8 + " * 8;",
                o.param->name + " + (" + o.batch + " + " + o.rowVar + " * " +
                    std::to_string(o.rowStride) + " + " + o.colVar + ")",
                "&" + arr);
  }

  /// A tile stored transposed (unit stride along its rows): 16-byte copies of
  /// 8 rows of one column, kept transposed in shared memory (As[k][m], Bs[n][k]).
  void transposedTileCopy(const MatmulOperand &o) {
    std::string rows8 = std::to_string(o.rows / 8);
    cpAsyncLoop(o, "const int r = e % " + rows8 + " * 8, c = e / " + rows8 + ";",
                o.param->name + " + (" + o.batch + " + " + o.rowVar + " + " + o.colVar + " * " +
                    std::to_string(o.colStride) + ")",
                "&" + o.name + "s[s][c][r]");
  }

  /// This thread's 16-byte copies of a tile: `position` names the chunk's
  /// (r, c) from e, `src` and `dst` its addresses; chunks outside the matrix
  /// are zero-filled.
  void cpAsyncLoop(const MatmulOperand &o, const std::string &position, const std::string &src,
                   const std::string &dst) {
    W.line("#pragma unroll");
    W.open("for (int i = 0; i < " + std::to_string(o.rows * o.cols / 8 / S.block) + "; ++i)");
    W.line("const int e = threadIdx.x + i * " + std::to_string(S.block) + ";");
    W.line(position);
    W.line("const " + E.Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " +
           o.col0 + " + c;");
    std::string ok = inBounds(o);
    if (ok.empty()) {
      W.line("mj_cp_async16(" + dst + ", " + src + ", true);");
    } else {
      W.line("const bool ok = " + ok + ";");
      W.line("mj_cp_async16(" + dst + ", ok ? " + src + " : " + o.param->name + ", ok);");
    }
    W.close();
  }

  /// The fragments of one 16-deep step (buffer `f` when double-buffered):
  /// A's rows and B's columns of this warp.
  void loadFragments(const std::string &f, const std::string &k16) {
    std::string at = S.fragBuffers == 2 ? "[" + f + "]" : "";
    W.line("#pragma unroll");
    if (S.vecAT) // As[k][m]: each 8x8 matrix transposed on the way to the fragment
      W.line("for (int mi = 0; mi < " + MI + "; ++mi) mj_ldmatrix_x4_trans(af" + at +
             "[mi], &As[s][" + k16 + " + lane / 16 * 8 + lane % 8][wm * " + std::to_string(WarpM) +
             " + mi * 16 + lane / 8 % 2 * 8]);");
    else
      W.line("for (int mi = 0; mi < " + MI + "; ++mi) mj_ldmatrix_x4(af" + at +
             "[mi], &As[s][wm * " + std::to_string(WarpM) + " + mi * 16 + lane % 16][" + k16 +
             " + lane / 16 * 8]);");
    W.line("#pragma unroll");
    W.open("for (int ni = 0; ni < " + NI + "; ni += 2)");
    W.line("unsigned r[4];");
    if (S.vecBT) // Bs[n][k] is already the fragment's column-major layout
      W.line("mj_ldmatrix_x4(r, &Bs[s][wn * " + std::to_string(WarpN) +
             " + ni * 8 + lane / 16 * 8 + lane % 8][" + k16 + " + lane / 8 % 2 * 8]);");
    else
      W.line("mj_ldmatrix_x4_trans(r, &Bs[s][" + k16 + " + lane % 16][wn * " +
             std::to_string(WarpN) + " + ni * 8 + lane / 16 * 8]);");
    W.line("bfr" + at + "[ni][0] = r[0], bfr" + at + "[ni][1] = r[1], bfr" + at +
           "[ni + 1][0] = r[2], bfr" + at + "[ni + 1][1] = r[3];");
    W.close();
  }

  void mainLoop() {
    std::string bk = std::to_string(S.bk);
    std::string mmaFn = K.matmul->dtype == DType::BF16 ? "mj_mma_bf16" : "mj_mma_f16";
    openCpAsyncSliceLoop("loadTiles", S.stages, S.bk);
    bool two = S.fragBuffers == 2;
    std::string F = two ? "[f]" : "";
    if (two) {
      W.line("unsigned af[2][" + MI + "][4], bfr[2][" + NI +
             "][2]; // this step's fragments and the next's");
      loadFragments("0", "0");
    }
    W.line("#pragma unroll");
    W.open("for (int k16 = 0; k16 < " + bk + "; k16 += 16)");
    if (two) {
      W.line("const int f = k16 / 16 % 2;");
      W.open("if (k16 + 16 < " + bk + ")");
      loadFragments("f ^ 1", "k16 + 16");
      W.close();
    } else {
      W.line("unsigned af[" + MI + "][4], bfr[" + NI + "][2];");
      loadFragments("", "k16");
    }
    W.line("#pragma unroll");
    W.open("for (int mi = 0; mi < " + MI + "; ++mi)");
    W.line("#pragma unroll");
    W.line("for (int ni = 0; ni < " + NI + "; ++ni) " + mmaFn + "(acc[mi][ni], af" + F +
           "[mi], bfr" + F + "[ni]);");
    W.close();
    W.close();
    W.close();
  }

  const MatmulMmaSchedule &S;
  const unsigned WarpM, WarpN; ///< a warp's share of the tile
  const std::string MI, NI;    ///< its 16x8 fragments along m and n
};

} // namespace

void emitMatmulMma(KernelEmitter &e, const MatmulMmaSchedule &s) { MmaEmitter(e, s).run(); }

} // namespace minijit
