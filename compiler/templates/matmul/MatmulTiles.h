//===- compiler/templates/matmul/MatmulTiles.h - what both matmul templates share -*- C++ -*-===//
// Used only inside compiler/templates/matmul/: which tile a block computes, how an
// operand's tile is read (with bounds checks only where tiles overhang), and
// the epilogue that finishes each output element.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/templates/matmul/MatmulInternal.h"

#include <string>

namespace minijit {

/// How one operand's tile is read: A is bm x bk (rows m, columns k), B is
/// bk x bn (rows k, columns n).
struct MatmulOperand {
  const KParam *param;
  bool isA;
  std::string name, batch, rowVar, colVar, row0, col0;
  int64_t rowExtent, colExtent; ///< of the matrix
  /// The extents as code: A's rows are m, the launch's for a kernel that
  /// serves many sizes (KernelEmitter::extent()).
  std::string rowExtentText, colExtentText;
  bool rowsVary = false; ///< rowExtent is such an m: no tile is known to be whole
  unsigned rows, cols;          ///< of the tile
  int64_t rowStride, colStride;
  bool vec;  ///< float4s along the tile's columns (the unit stride)
  bool vecT; ///< float4s along the tile's rows (the operand stored transposed)
};

class MatmulEmitter {
public:
  MatmulEmitter(KernelEmitter &e, const MatmulTile &t) : E(e), W(e.W), K(e.K), T(t) {}

  /// Tile coordinates and the batch offsets of both operands.
  void prologue();
  /// m as code: a number, or the launch's m (KernelEmitter::extent()).
  std::string mText() const { return E.extent(); }
  /// The tiles along m as code.
  std::string tilesMText() const;
  /// An index as TMA's 32-bit coordinate (the Hopper templates' loads).
  std::string tmaCoord(const std::string &v) const { return E.Idx == "int" ? v : "(int)" + v; }
  MatmulOperand operand(bool isA) const;
  /// The bounds check of a tile element at (rowVar, colVar): empty when
  /// every tile lies inside the matrix (the extents are whole tiles).
  std::string inBounds(const MatmulOperand &o) const;
  /// The check of both extents, whole tiles or not (element loads).
  std::string bothBounds(const MatmulOperand &o) const;
  /// Element e of a tile as (r, c) and its matrix coordinates.
  void tileElement(const MatmulOperand &o, const std::string &e);
  /// (r, c) of element e of a tile: the fastest index follows the unit stride.
  std::string tilePosition(const MatmulOperand &o, const std::string &e) const;
  /// One element of a tile from memory, zero outside the matrix.
  std::string operandLoad(const MatmulOperand &o, bool toFloat) const;
  /// `kTiles`, the k-slices of `bk` the loop takes.
  void kTilesLine(unsigned bk);
  /// The copies of the first stages - 1 k-slices by the lambda `load(s,
  /// k0)`, a cp.async group each (empty ones too, so the groups count the
  /// slices).
  void cpAsyncPrologue(const std::string &load, unsigned stages, unsigned bk);
  /// In slice t, the copy of slice t + stages - 1 into the stage slice t -
  /// 1 used, and its group (empty past the last slice).
  void cpAsyncNextSlice(const std::string &load, unsigned stages, unsigned bk);
  /// The k-slice loop of a template whose tiles are copied by cp.async into
  /// `stages` stages of shared memory by the lambda `load(s, k0)`: the
  /// first stages - 1 slices, then the loop over slices t with its head
  /// (slice t landed for every thread, slice t + stages - 1 copied into the
  /// stage slice t - 1 used) up to `s`, slice t's stage. The caller writes
  /// the work on stage s and closes the loop.
  void openCpAsyncSliceLoop(const std::string &load, unsigned stages, unsigned bk);
  /// The epilogue of one output element (m, n): its matmul value
  /// `accExpr`, the elementwise ops after it, the stores.
  void epilogue(const std::string &accExpr);
  /// Whether every store of the kernel is contiguous over `vec` consecutive
  /// output columns (then vectorEpilogue applies).
  bool vectorEpilogueFits(unsigned vec = 4) const;
  /// The epilogue of `vec` consecutive output columns (m, vec * nv .. vec *
  /// nv + vec - 1), lane j's matmul value `accExpr` (which names j), as one
  /// vector of element work: vector loads and stores where they are
  /// contiguous (16 bytes for four floats, 4 for two halves).
  void vectorEpilogue(const std::string &accExpr, unsigned vec = 4);

  KernelEmitter &E;
  CodeWriter &W;
  const LoweredKernel &K;
  const MatmulTile &T;
};

} // namespace minijit
