//===- ir/Limits.h - the largest graphs minijit accepts ---------*- C++ -*-===//
// Every size limit in one place. Graph::add checks them as each node is
// added (so the builder, the parser and every pass that rebuilds a graph do
// too), and the stages after it may rely on them. An input beyond a limit
// gets a GraphError (a ParseError from the parser) that names the limit.
// docs/HARDENING.md gives the reasons for each figure.
//===----------------------------------------------------------------------===//
#pragma once

#include <cstddef>
#include <cstdint>

namespace minijit {

/// The largest rank a tensor may have.
constexpr unsigned kMaxRank = 8;

/// The largest number of elements a tensor may have (2^40): offsets and byte
/// counts then fit 64-bit integers with room to spare.
constexpr int64_t kMaxElements = int64_t(1) << 40;

/// The largest tensor in bytes (4 TiB): kMaxElements of the widest dtype
/// (4 bytes), so the element limit implies this one.
constexpr int64_t kMaxTensorBytes = kMaxElements * 4;

/// The most nodes (arguments, literals and ops) one graph may have. Fusion and
/// scheduling take time that grows faster than linearly with the number of
/// values one kernel holds; at this size a graph still compiles in seconds.
constexpr size_t kMaxNodes = size_t(1) << 16;

/// The longest chain of ops from a graph argument or literal to a value
/// (a value's depth is one more than its deepest operand's). Lowering walks
/// such chains recursively, about 1 KB of stack per level in a release build
/// (1 MB of the 8 MB a Linux thread gets); AddressSanitizer's frames are
/// several times larger, so scripts/sanitize.sh raises the stack limit.
constexpr unsigned kMaxDepth = 1024;

/// The most views (reshape, permute, broadcast) in a chain with no reduction
/// or matmul between them (elementwise ops may be). A kernel reads through
/// such a chain by composing index arithmetic, whose printed form can grow
/// about twofold with each view; at this many a kernel's CUDA stays under a
/// megabyte.
constexpr unsigned kMaxViewChain = 12;

/// The most operands one concat takes: each is a select in every element's
/// arithmetic.
constexpr size_t kMaxConcatOperands = 64;

} // namespace minijit
