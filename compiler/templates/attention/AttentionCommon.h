//===- compiler/templates/attention/AttentionCommon.h - what both attention kernels write ---===//
// Used only inside compiler/templates/attention/: the pieces the CUDA
// cores' kernel (Attention.cpp) and the tensor cores' (AttentionMma.cpp)
// write alike: how far the walk over the keys
// goes, and the score work between the two products.
//===----------------------------------------------------------------------===//
#pragma once

#include "compiler/lower/Lowering.h"
#include "ir/DType.h"

#include <functional>
#include <string>

namespace minijit {

class KernelEmitter;

/// The bound of the walk over the keys for a tile of `rows` query rows from
/// m0: all of them, or with a causal mask the keys up to the tile's last row
/// (those past it are masked for every row of the tile), declared as mj_keys.
std::string attentionKeyBound(KernelEmitter &e, unsigned rows);

/// The first key of the walk, a multiple of `cols` (the keys a tile): 0, or
/// with a window of W keys the tile holding key m0 - W + 1 (the keys before
/// it are masked for every row of the tile), declared as mj_firstKey.
std::string attentionKeyStart(KernelEmitter &e, unsigned cols);

/// Which of a score's bounds need a test (true: m may pass M, or n may pass
/// N); neither where the kernel's tiles divide the rows or the keys exactly.
struct ScoreBounds {
  bool rows = true, keys = true;
};

/// For the score at (m, n), whose product element is `dot`: -inf past the
/// ends (`pastEnds` says which, as a comment; no test where `bounds` says
/// none can be), else the graph's work on the scores (scale, mask, bias,
/// soft-cap) computed into mj_score, the value the softmax reads. `inside`
/// writes more where the work's values are in scope.
void attentionScoreWork(KernelEmitter &e, const std::string &dot, const std::string &pastEnds,
                        ScoreBounds bounds = {}, const std::function<void()> &inside = {});

/// The tile's batch `b` and first query row `m0` from blockIdx.x, a block
/// per (batch, tile of `rows` query rows), `tiles` tiles a batch; with a
/// causal mask a batch's tiles from the last to the first (the grid ends on
/// the lightest).
void attentionTileOrigin(KernelEmitter &e, int64_t tiles, unsigned rows);

/// The type of a score's row and key: int where m * N + n fits one and
/// every tensor the kernel reads or writes has fewer than 2^31 elements
/// (so each term m * stride of an offset fits too), else the kernel's
/// index type.
std::string attentionPosType(const KernelEmitter &e);

/// Two probabilities rounded to `dtype` (f16 or bf16), packed as a 32-bit
/// fragment register: `lo` in the low half.
std::string attentionPack(DType dtype, const std::string &lo, const std::string &hi);

/// Whether rows of an operand (16-bit, `width` columns) can be copied in
/// whole 16-byte pieces (cp.async): contiguous columns, rows and start
/// (`base`, the batch's offset) on 8-element boundaries.
bool attentionCopiesWholePieces(const LoweredKernel &k, int64_t width, int64_t strideRow,
                                int64_t strideCol, const IndexExpr &base);

/// Whether the tensor cores' kernels may compute the scores in log2 units
/// (times log2(e)) at no cost, and if so arranges it: the score work is a
/// product times a positive literal, masked by zero or more
/// where(c, x, -inf) whose conditions do not read the scores and casts to
/// f32 (a 16-bit score's softmax in f32), each value of it read once, and
/// the kernel stores no row statistics. The literal is
/// then written times log2(e) (KernelEmitter::LiteralAs), so that each
/// probability is exp2(score - max): one subtraction and the exp2, where
/// e^(score - max) needs a multiply more.
bool attentionScoresInLog2(KernelEmitter &e);

/// e^x, or 2^x where the scores are in log2 units (`log2`), for the
/// probabilities rounded to 16 bits (mj_exp_ftz, mj_exp2_ftz).
std::string attentionExp(bool log2, const std::string &x);

/// The online softmax's new max for each of the thread's `rows` rows: the
/// tile's mj_tileMax combined over a row's four threads (neighbouring lanes:
/// mma's and wgmma's accumulator layout), then mj_base (what the tile's
/// exponentials subtract), mj_rescale (the factor of the sum and O so far)
/// and mj_tileSum (zeroed) declared, and mj_rowMax updated. `log2`: the
/// scores are in log2 units (attentionScoresInLog2).
void attentionRescale(KernelEmitter &e, unsigned rows, bool log2);

/// After the tile's exponentials are summed into mj_tileSum: the sums
/// combined over a row's four threads, and each row's mj_rowSum rescaled and
/// grown by its tile's.
void attentionAddTileSums(KernelEmitter &e, unsigned rows);

} // namespace minijit
