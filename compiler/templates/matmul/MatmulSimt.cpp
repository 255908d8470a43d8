//===- compiler/templates/matmul/MatmulSimt.cpp - f32 matmul on the CUDA cores ---===//
// Each thread computes tm x tn outputs from values it reads out of shared
// memory; the next k-slice is fetched into registers while this one is used
// (two stages of shared tiles), or, with three or four stages, copied by
// cp.async straight into shared memory. An operand whose k is contiguous in
// memory is kept so in shared memory (kRowsA, kRowsB) or transposed on the
// way. The elementwise epilogue runs per output.
//===----------------------------------------------------------------------===//
#include "compiler/templates/matmul/MatmulTiles.h"

namespace minijit {

namespace {

/// The longest k for which the epilogue stores float4s (see run()).
constexpr int64_t kVectorEpilogueMaxK = 1024;

class SimtEmitter : MatmulEmitter {
public:
  SimtEmitter(KernelEmitter &e, const MatmulSimtSchedule &s)
      : MatmulEmitter(e, s), S(s), Ops{operand(true), operand(false)},
        // With 8x8 outputs a thread takes two 4-wide groups of rows (and of
        // columns), half a tile apart, so that a warp's float4 reads of
        // shared memory fall in distinct banks; with 8x16, four groups of
        // columns a quarter of the tile apart.
        Grouped(s.tm == 8 && (s.tn == 8 || s.tn == 16)), Async(s.stages > 2) {
    for (int i = 0; i < 2; ++i)
      PerThread[i] = (count(Ops[i]) + S.block - 1) / S.block;
  }

  void run() {
    prologue();
    declarations();
    if (Async) {
      asyncCopy();
      asyncLoop();
    } else {
      fetch();
      stash();
      mainLoop();
    }
    // The vector epilogue pays where the stores are a large part of the
    // work (a short k); with a long k its registers slow the main loop more
    // than it saves, so it stops at kVectorEpilogueMaxK
    // (docs/PERFORMANCE_LOG.md, "Figures once quoted in code comments").
    if (Grouped && !S.kRowsB && K.matmul->K <= kVectorEpilogueMaxK && vectorEpilogueFits())
      vectorEpilogueLoop();
    else
      scalarEpilogueLoop();
    W.raw("}\n");
  }

private:
  void scalarEpilogueLoop() {
    W.line("// epilogue: each output element in registers, then stored");
    W.line("#pragma unroll");
    W.open("for (int ii = 0; ii < " + std::to_string(S.tm) + "; ++ii)");
    W.line("#pragma unroll");
    W.open("for (int jj = 0; jj < " + std::to_string(S.tn) + "; ++jj)");
    W.line("const " + E.Idx + " m = m0 + " + rowOf() + ", n = n0 + " + colOf() + ";");
    epilogue("acc[ii][jj]");
    W.close();
    W.close();
  }

  /// A thread's columns come in groups of four consecutive ones: each group
  /// of a row is one vector of element work (float4 stores).
  void vectorEpilogueLoop() {
    W.line("// epilogue: each output row's four consecutive columns as one vector, then stored");
    W.line("#pragma unroll");
    W.open("for (int ii = 0; ii < " + std::to_string(S.tm) + "; ++ii)");
    W.line("#pragma unroll");
    W.open("for (int jg = 0; jg < " + std::to_string(S.tn / 4) + "; ++jg)");
    W.line("const " + E.Idx + " m = m0 + " + rowOf() + ", nv = (n0 + jg * " +
           std::to_string(groupSpan(S.bn, S.tn)) + " + tx * 4) / 4; // 4 * nv .. 4 * nv + 3");
    vectorEpilogue("acc[ii][jg * 4 + j]");
    W.close();
    W.close();
  }

  /// Loads of one operand's tile: float4s along the unit stride, or elements.
  unsigned count(const MatmulOperand &o) const {
    return o.rows * o.cols / (o.vec || o.vecT ? 4 : 1);
  }

  /// Grouped: how far apart a thread's groups of four rows (columns) are,
  /// for a tile `width` wide and `count` rows (columns) a thread.
  static unsigned groupSpan(unsigned width, unsigned count) { return width / (count / 4); }

  // A tile kept along k (kRowsA, kRowsB) gives a thread rows (columns)
  // interleaved, bm / tm (bn / tn) apart: a warp's float4 reads along k
  // then take consecutive rows of the tile, in distinct banks (rows of k
  // floats; of B, k + 4, as 8 threads read 8 rows).
  std::string rowOf() const {
    if (S.kRowsA)
      return "ii * " + std::to_string(S.bm / S.tm) + " + ty";
    return Grouped ? "(ii / 4) * " + std::to_string(groupSpan(S.bm, S.tm)) + " + ty * 4 + ii % 4"
                   : "ty * " + std::to_string(S.tm) + " + ii";
  }
  std::string colOf() const {
    if (S.kRowsB)
      return "jj * " + std::to_string(S.bn / S.tn) + " + tx";
    return Grouped ? "(jj / 4) * " + std::to_string(groupSpan(S.bn, S.tn)) + " + tx * 4 + jj % 4"
                   : "tx * " + std::to_string(S.tn) + " + jj";
  }
  /// This thread's row v of A's tile kept along k (v = ii), or column v
  /// of B's (v = jj), as code with v a number.
  std::string keptRow(unsigned v) const { return std::to_string(v * (S.bm / S.tm)) + " + ty"; }
  std::string keptColumn(unsigned v) const {
    return std::to_string(v * (S.bn / S.tn)) + " + tx";
  }

  void declarations() {
    std::string bm = std::to_string(S.bm), bn = std::to_string(S.bn), bk = std::to_string(S.bk);
    std::string TM = std::to_string(S.tm), TN = std::to_string(S.tn);
    std::string stages = std::to_string(S.stages);
    auto tiles = [&](const std::string &name, const std::string &rows, const std::string &cols,
                     const std::string &what) {
      W.line("__shared__ alignas(16) float " + name + "[" + stages + "][" + rows + "][" + cols +
             "]; // " + what);
    };
    if (S.kRowsA)
      tiles("As", bm, bk, "A tiles as stored: As[s][m][k]");
    else
      tiles("As", bk, bm + " + 4", "A tiles, transposed: As[s][k][m]");
    if (S.kRowsB)
      tiles("Bs", bn, bk + " + 4", "B tiles as stored: Bs[s][n][k]");
    else
      tiles("Bs", bk, bn + " + 4", "B tiles: Bs[s][k][n]");
    std::string tx = std::to_string(S.bn / S.tn);
    W.line("const int tx = threadIdx.x % " + tx + ", ty = threadIdx.x / " + tx + ";");
    W.line("// this thread's outputs: rows m0 + " + rowOf() + ", columns n0 + " + colOf());
    W.line("float acc[" + TM + "][" + TN + "];");
    W.line("#pragma unroll");
    W.open("for (int ii = 0; ii < " + TM + "; ++ii)");
    W.line("#pragma unroll");
    W.line("for (int jj = 0; jj < " + TN + "; ++jj) acc[ii][jj] = 0.0f;");
    W.close();
    // Registers holding the next k-slice.
    for (int i = 0; i < 2 && !Async; ++i) {
      const MatmulOperand &o = Ops[i];
      bool v = o.vec || o.vecT;
      W.line((v ? "float4 " : "float ") + o.name + "next[" + std::to_string(PerThread[i]) +
             "]; // " + (o.vecT ? "float4s down the columns" : v ? "float4s" : "elements") +
             " of the next " + o.name + " tile");
    }
  }

  /// The loop over this thread's share of operand i's tile; `body` writes
  /// the work on element `e`.
  template <typename Body> void perThreadLoop(int i, Body body) {
    W.line("#pragma unroll");
    W.open("for (int i = 0; i < " + std::to_string(PerThread[i]) + "; ++i)");
    W.line("const int e = threadIdx.x + i * " + std::to_string(S.block) + ";");
    const MatmulOperand &o = Ops[i];
    // (a tile of fewer loads than threads, 64 float4s of a 256x32 tile's
    // B on 128 threads, leaves the rest idle)
    bool guard = count(o) % S.block != 0;
    if (guard)
      W.open("if (e < " + std::to_string(count(o)) + ")");
    body(o);
    if (guard)
      W.close();
    W.close();
  }

  void fetch() {
    W.line("// reads the k-slice at k0 from memory into registers");
    W.open("auto fetch = [&](" + E.Idx + " k0)");
    for (int i = 0; i < 2; ++i)
      perThreadLoop(i, [&](const MatmulOperand &o) {
        if (o.vecT) {
          fetchDownColumns(o);
          return;
        }
        if (!o.vec) {
          tileElement(o, "e");
          W.line(o.name + "next[i] = " + operandLoad(o, true) + ";");
          return;
        }
        std::string cols4 = std::to_string(o.cols / 4);
        W.line("const int r = e / " + cols4 + ", c = e % " + cols4 + " * 4;");
        fetchFloat4(o, o.rowVar + " * " + std::to_string(o.rowStride) + " + " + o.colVar);
      });
    W.close("};");
  }

  void stash() {
    W.line("// stores the fetched k-slice into stage s of the tiles");
    W.open("auto stash = [&](int s)");
    for (int i = 0; i < 2; ++i)
      perThreadLoop(i, [&](const MatmulOperand &o) {
        if (o.vecT) {
          stashDownColumns(o);
          return;
        }
        if (!o.vec) {
          W.line(tilePosition(o, "e"));
          W.line(std::string(o.isA ? "As[s][c][r]" : "Bs[s][r][c]") + " = " + o.name + "next[i];");
          return;
        }
        std::string cols4 = std::to_string(o.cols / 4);
        W.line("const int r = e / " + cols4 + ", c = e % " + cols4 + " * 4;");
        if (S.kRowsA && o.isA)
          W.line("*reinterpret_cast<float4 *>(&As[s][r][c]) = Anext[i];");
        else if (o.isA)
          W.line("As[s][c][r] = Anext[i].x, As[s][c + 1][r] = Anext[i].y, As[s][c + 2][r] = "
                 "Anext[i].z, As[s][c + 3][r] = Anext[i].w;");
        else
          W.line("*reinterpret_cast<float4 *>(&Bs[s][r][c]) = Bnext[i];");
      });
    W.close("};");
  }

  /// Element e of a tile read as float4s down its columns: rows r..r+3 of
  /// column c, contiguous in memory (the row stride is 1).
  void downColumns(const MatmulOperand &o) {
    W.line("const int r = e % " + std::to_string(o.rows / 4) + " * 4, c = e / " +
           std::to_string(o.rows / 4) + ";");
  }

  void fetchDownColumns(const MatmulOperand &o) {
    downColumns(o);
    fetchFloat4(o, o.rowVar + " + " + o.colVar + " * " + std::to_string(o.colStride));
  }

  /// The float4 at the tile position (r, c) into o.name + "next[i]", read at
  /// `offset` past the operand's batch start; zeros outside the matrix.
  void fetchFloat4(const MatmulOperand &o, const std::string &offset) {
    W.line("const " + E.Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " +
           o.col0 + " + c;");
    std::string load = "*reinterpret_cast<const float4 *>(" + o.param->name + " + " + o.batch +
                       " + " + offset + ")";
    std::string ok = inBounds(o);
    W.line(o.name + "next[i] = " +
           (ok.empty() ? load : ok + " ? " + load + " : make_float4(0.0f, 0.0f, 0.0f, 0.0f)") + ";");
  }

  void stashDownColumns(const MatmulOperand &o) {
    downColumns(o);
    if (o.isA) // As is stored [k][m]: four rows of A are four consecutive floats
      W.line("*reinterpret_cast<float4 *>(&As[s][c][r]) = Anext[i];");
    else if (S.kRowsB) // Bs is stored [n][k]: four k of a column are consecutive
      W.line("*reinterpret_cast<float4 *>(&Bs[s][c][r]) = Bnext[i];");
    else
      W.line("Bs[s][r][c] = Bnext[i].x, Bs[s][r + 1][c] = Bnext[i].y, Bs[s][r + 2][c] = "
             "Bnext[i].z, Bs[s][r + 3][c] = Bnext[i].w;");
  }

  /// `count` values of this thread's row (or column) of a tile slice into `dst`.
  void readSlice(const std::string &dst, const std::string &tile, unsigned count, unsigned width,
                 const std::string &who) {
    if (count % 4 != 0) {
      W.line("#pragma unroll");
      W.line("for (int q = 0; q < " + std::to_string(count) + "; ++q) " + dst + "[q] = " + tile +
             "[s][p][" + who + " * " + std::to_string(count) + " + q];");
      return;
    }
    for (unsigned g = 0; g < count / 4; ++g) {
      std::string at = Grouped ? std::to_string(g * groupSpan(width, count)) + " + " + who + " * 4"
                               : who + " * " + std::to_string(count) + " + " + std::to_string(4 * g);
      W.line("*reinterpret_cast<float4 *>(&" + dst + "[" + std::to_string(4 * g) +
             "]) = *reinterpret_cast<const float4 *>(&" + tile + "[s][p][" + at + "]);");
    }
  }

  /// cp.async copies of `bytes` (4 or 16) from `src` to `dst`, zeros where
  /// `ok` is false (empty: always in bounds); with `lanes`, four 4-byte
  /// copies of consecutive floats (j = 0..3) into `dst`, which names j.
  void copy(const MatmulOperand &o, const std::string &dst, const std::string &src, int bytes,
            const std::string &ok, bool lanes = false) {
    std::string fn = "mj_cp_async" + std::to_string(bytes);
    if (!ok.empty())
      W.line("const bool ok = " + ok + ";");
    std::string from = ok.empty() ? src : "ok ? " + src + " : " + o.param->name;
    std::string call = fn + "(" + dst + ", " + from + ", " + (ok.empty() ? "true" : "ok") + ");";
    if (!lanes) {
      W.line(call);
      return;
    }
    W.line("#pragma unroll");
    W.line("for (int j = 0; j < 4; ++j) " + call);
  }

  /// The copies of the k-slice at k0 into stage s, straight into shared
  /// memory: 16 bytes where four floats of the tile are consecutive in
  /// shared memory too, else one float at a time (the tile transposed on
  /// the way: A's rows along k into As[k][m], B stored [n, k] into Bs[k][n]).
  void asyncCopy() {
    W.line("// copies the k-slice at k0 into stage s (cp.async: in flight while earlier slices are "
           "used; zeros outside the matrix)");
    W.open("auto load = [&](int s, " + E.Idx + " k0)");
    for (int i = 0; i < 2; ++i)
      perThreadLoop(i, [&](const MatmulOperand &o) {
        const std::string &p = o.param->name;
        if (o.vecT) {
          downColumns(o);
          W.line("const " + E.Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " +
                 o.col0 + " + c;");
          std::string src = p + " + " + o.batch + " + " + o.rowVar + " + " + o.colVar + " * " +
                            std::to_string(o.colStride);
          if (o.isA) // four rows of A are four consecutive floats of As[k][m]
            copy(o, "&As[s][c][r]", src, 16, inBounds(o));
          else if (S.kRowsB) // and four k of B's column of Bs[n][k]
            copy(o, "&Bs[s][c][r]", src, 16, inBounds(o));
          else
            copy(o, "&Bs[s][r + j][c]", src + " + j", 4, inBounds(o), true);
          return;
        }
        if (o.vec) {
          std::string cols4 = std::to_string(o.cols / 4);
          W.line("const int r = e / " + cols4 + ", c = e % " + cols4 + " * 4;");
          W.line("const " + E.Idx + " " + o.rowVar + " = " + o.row0 + " + r, " + o.colVar + " = " +
                 o.col0 + " + c;");
          std::string src = p + " + " + o.batch + " + " + o.rowVar + " * " +
                            std::to_string(o.rowStride) + " + " + o.colVar;
          if (S.kRowsA && o.isA)
            copy(o, "&As[s][r][c]", src, 16, inBounds(o));
          else if (o.isA)
            copy(o, "&As[s][c + j][r]", src + " + j", 4, inBounds(o), true);
          else
            copy(o, "&Bs[s][r][c]", src, 16, inBounds(o));
          return;
        }
        tileElement(o, "e");
        copy(o, o.isA ? "&As[s][c][r]" : "&Bs[s][r][c]",
             p + " + " + o.batch + " + " + o.rowVar + " * " + std::to_string(o.rowStride) + " + " +
                 o.colVar + " * " + std::to_string(o.colStride),
             4, bothBounds(o));
      });
    W.close("};");
  }

  /// The loop over k-slices with `stages` slices in shared memory: slice t
  /// is used while slices t + 1 .. t + stages - 2 are in flight, and slice
  /// t + stages - 1 is copied into the stage slice t - 1 used. One barrier a
  /// slice.
  void asyncLoop() {
    if (S.fragBuffers == 2) {
      asyncPipelinedLoop();
      return;
    }
    openCpAsyncSliceLoop("load", S.stages, S.bk);
    sliceSteps();
    W.close();
  }

  /// The reads of step p of stage s into fragment set f (frag=2).
  void fragmentsLambda() {
    std::string TM = std::to_string(S.tm), TN = std::to_string(S.tn);
    W.line("float ar[2][" + TM + "], br[2][" + TN + "]; // fragments: this step's and the next's");
    W.line("// reads step p of stage s into fragment set f");
    W.open("auto fragments = [&](int f, int s, int p)");
    readSlice("ar[f]", "As", S.tm, S.bm, "ty");
    readSlice("br[f]", "Bs", S.tn, S.bn, "tx");
    W.close("};");
  }

  /// The cp.async loop with the fragments of step p + 1 read during step
  /// p's multiply-adds (frag=2), as CUTLASS's multistage loop: in the last
  /// step of slice t the block waits for slice t + 1 and reads its first
  /// fragments before the step's multiply-adds; in the first step of slice
  /// t the copy of slice t + stages - 1 goes into the stage slice t - 1
  /// used (every thread read it before that wait). One barrier a slice.
  void asyncPipelinedLoop() {
    const unsigned st = S.stages;
    std::string bk = std::to_string(S.bk), Stages = std::to_string(st);
    std::string pending = std::to_string(st - 2);
    kTilesLine(S.bk);
    fragmentsLambda();
    cpAsyncPrologue("load", st, S.bk);
    W.line("mj_cp_async_wait<" + pending + ">(); // slice 0 has landed");
    W.line("__syncthreads();");
    W.line("fragments(0, 0, 0);");
    W.open("for (int t = 0; t < kTiles; ++t)");
    W.line("const int s = t % " + Stages + ";");
    W.line("#pragma unroll");
    W.open("for (int p = 0; p < " + bk + "; ++p)");
    W.open("if (p == 0)");
    cpAsyncNextSlice("load", st, S.bk);
    W.close();
    pipelinedStep(
        [&] {
          W.line("mj_cp_async_wait<" + pending + ">(); // slice t + 1 has landed");
          W.line("__syncthreads(); // ... for every thread");
        },
        "(t + 1) % " + Stages);
    W.close();
    W.close();
  }

  /// Step p of a pipelined loop (frag=2): in a slice's last step
  /// `stageSwitch` (the next slice made ready for every thread) and that
  /// slice's first fragments from stage `next`, in the others step p + 1's
  /// from this stage; then step p's multiply-adds.
  template <typename Switch> void pipelinedStep(Switch stageSwitch, const std::string &next) {
    W.open("if (p == " + std::to_string(S.bk - 1) + ")");
    stageSwitch();
    W.line("fragments((p + 1) % 2, " + next + ", 0); // the next slice's first step");
    W.close();
    W.open("else");
    W.line("fragments((p + 1) % 2, s, p + 1);");
    W.close();
    multiplyAdds("ar[p % 2][ii]", "br[p % 2][jj]");
  }

  /// The k-steps p of stage s: each reads this thread's fragments and
  /// multiplies. Tiles kept k-contiguous are read four steps at a time, a
  /// float4 along k for each of the thread's rows (columns).
  void sliceSteps() {
    if (!S.kRowsA && !S.kRowsB) {
      W.line("#pragma unroll");
      W.open("for (int p = 0; p < " + std::to_string(S.bk) + "; ++p)");
      stepFragments();
      multiplyAdds("ar[ii]", "br[jj]");
      W.close();
      return;
    }
    W.line("#pragma unroll");
    W.open("for (int p4 = 0; p4 < " + std::to_string(S.bk) + "; p4 += 4)");
    auto fourSteps = [&](const std::string &dst, const std::string &tile, unsigned count,
                         bool rows) {
      W.line("float " + dst + "[" + std::to_string(count) + "][4]; // " +
             (rows ? "rows" : "columns") + " x k-steps p4 .. p4 + 3");
      for (unsigned v = 0; v < count; ++v)
        W.line("*reinterpret_cast<float4 *>(" + dst + "[" + std::to_string(v) +
               "]) = *reinterpret_cast<const float4 *>(&" + tile + "[s][" +
               (rows ? keptRow(v) : keptColumn(v)) + "][p4]);");
    };
    if (S.kRowsA)
      fourSteps("a4", "As", S.tm, true);
    if (S.kRowsB)
      fourSteps("b4", "Bs", S.tn, false);
    W.line("#pragma unroll");
    W.open("for (int q = 0; q < 4; ++q)");
    if (!S.kRowsA || !S.kRowsB)
      W.line("const int p = p4 + q;");
    if (!S.kRowsA) {
      W.line("float ar[" + std::to_string(S.tm) + "];");
      readSlice("ar", "As", S.tm, S.bm, "ty");
    }
    if (!S.kRowsB) {
      W.line("float br[" + std::to_string(S.tn) + "];");
      readSlice("br", "Bs", S.tn, S.bn, "tx");
    }
    multiplyAdds(S.kRowsA ? "a4[ii][q]" : "ar[ii]", S.kRowsB ? "b4[jj][q]" : "br[jj]");
    W.close();
    W.close();
  }

  /// This thread's fragments of step p of stage s, into ar and br.
  void stepFragments() {
    W.line("float ar[" + std::to_string(S.tm) + "], br[" + std::to_string(S.tn) + "];");
    readSlice("ar", "As", S.tm, S.bm, "ty");
    readSlice("br", "Bs", S.tn, S.bn, "tx");
  }

  /// The step's multiply-adds from the fragment values `a` (row ii) and
  /// `b` (column jj).
  void multiplyAdds(const std::string &a, const std::string &b) {
    W.line("#pragma unroll");
    W.open("for (int ii = 0; ii < " + std::to_string(S.tm) + "; ++ii)");
    W.line("#pragma unroll");
    W.line("for (int jj = 0; jj < " + std::to_string(S.tn) + "; ++jj) acc[ii][jj] = fmaf(" + a +
           ", " + b + ", acc[ii][jj]);");
    W.close();
  }

  /// The loop over k-slices: the next slice is fetched into registers while
  /// this one is used, then stored into the other stage. With fragBuffers 2
  /// (the pipelined form) the fragments of step p + 1 are read while step p
  /// multiplies, and in the last step of a slice the fetched slice goes to
  /// the other stage, the block waits, and the other stage's first fragments
  /// are read before this step's multiply-adds, so the stage switch costs no
  /// pause (the order of CUTLASS's two-stage loop).
  void mainLoop() {
    const bool pipelined = S.fragBuffers == 2;
    std::string bk = std::to_string(S.bk);
    kTilesLine(S.bk);
    if (pipelined)
      fragmentsLambda();
    W.line("fetch(0);");
    W.line("stash(0);");
    W.line("__syncthreads();");
    if (pipelined)
      W.line("fragments(0, 0, 0);");
    W.open("for (int t = 0; t < kTiles; ++t)");
    W.line("const int s = t % 2;");
    W.line("if (t + 1 < kTiles) fetch((" + E.Idx + ")(t + 1) * " + bk +
           "); // in flight while this slice is used");
    if (!pipelined) {
      sliceSteps();
      W.line("if (t + 1 < kTiles) stash(s ^ 1); // the other stage: everyone finished it last step");
      W.line("__syncthreads();");
      W.close();
      return;
    }
    W.line("#pragma unroll");
    W.open("for (int p = 0; p < " + bk + "; ++p)");
    pipelinedStep(
        [&] {
          W.line("if (t + 1 < kTiles) stash(s ^ 1); // the other stage: everyone finished it last "
                 "slice");
          W.line("__syncthreads();");
        },
        "s ^ 1");
    W.close();
    W.close();
  }

  const MatmulSimtSchedule &S;
  const MatmulOperand Ops[2];
  unsigned PerThread[2];
  const bool Grouped;
  const bool Async; ///< stages > 2: cp.async into shared memory
};

} // namespace

void emitMatmulSimt(KernelEmitter &e, const MatmulSimtSchedule &s) { SimtEmitter(e, s).run(); }

} // namespace minijit
