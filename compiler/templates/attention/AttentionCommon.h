//===- compiler/templates/attention/AttentionCommon.h - what both attention kernels write ---===//
// Used only inside compiler/templates/attention/: the pieces the CUDA
// cores' kernel (Attention.cpp) and the tensor cores' (AttentionMma.cpp)
// write alike: how far the walk over the keys
// goes, and the score work between the two products.
//===----------------------------------------------------------------------===//
#pragma once

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

} // namespace minijit
