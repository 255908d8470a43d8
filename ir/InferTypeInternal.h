//===- ir/InferTypeInternal.h - the type rules of Graph::add -----*- C++ -*-===//
// Graph::add checks a node and infers its type with TypeRules: one rule per
// op class (ir/InferType.cpp; the views, concat and gathers in
// ir/InferViewType.cpp), and the checks they share. Used only inside ir/.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include "llvm/ADT/ArrayRef.h"
#include "llvm/ADT/StringRef.h"

#include <string>
#include <vector>

namespace minijit::detail {

/// The checks and inference of one node: `infer` gives the node `spec`
/// makes (op, operands, dtype, shape, attributes), or throws GraphError with
/// the numbers. `nodes` are the graph's nodes so far (the operands among
/// them); `spelling` the language of the hints in the messages.
class TypeRules {
public:
  TypeRules(const NodeSpec &spec, const std::vector<Node> &nodes, Spelling spelling)
      : spec(spec), nodes(nodes), spelling(spelling), op(opName(spec.op)) {}

  Node infer();

private:
  void inferInput(Node &n);
  void inferConstant(Node &n);
  void inferIota(Node &n);
  void inferUnary(Node &n);
  void inferBinary(Node &n);
  void inferSelect(Node &n);
  void inferCast(Node &n);
  void inferReduce(Node &n);
  void inferScan(Node &n);
  void inferMatmul(Node &n);
  void inferRandom(Node &n);
  void inferDerivative(Node &n);
  // ir/InferViewType.cpp
  void inferView(Node &n);
  void inferPermute(Node &n, const Node &x);
  void inferSlice(Node &n, const Node &x);
  void inferFlip(Node &n, const Node &x);
  void inferPad(Node &n, const Node &x);
  void inferReshapeOrBroadcast(Node &n, const Node &x);
  void inferConcat(Node &n);
  void inferGather(Node &n);

  const Node &operand(unsigned i) const { return nodes[spec.operands[i]]; }

  const NodeSpec &spec;
  const std::vector<Node> &nodes;
  Spelling spelling;
  llvm::StringRef op; ///< the op's spelling, for messages
};

/// Throws GraphError(msg).
[[noreturn]] void fail(const std::string &msg);
/// `[4, 8]`.
std::string dimsStr(llvm::ArrayRef<int64_t> v);
/// `%x`, or "a literal" for a constant (which has no name).
std::string refOf(const Node &n);
/// `x.cast(DType::F32)` or `cast %x to=f32`: how the user would write a
/// cast of value `name`, in the language the graph is being built in.
std::string castHint(llvm::StringRef name, DType to, Spelling spelling);
void checkArity(OpKind op, size_t got, size_t want);
void checkSameDType(OpKind op, const Node &a, const Node &b, Spelling spelling);
/// `axis` of an op over a rank-`rank` operand, negatives counted from the end.
int64_t normalizedAxis(llvm::StringRef op, int64_t axis, unsigned rank);
/// Refuses an op that needs a number of elements along `axis` where the
/// operand has a named size there (its value is known only at run time).
void refuseNamedAxis(llvm::StringRef op, const Shape &s, int64_t axis, llvm::StringRef doing);
/// Checks the literal value= of pad or full (`op`) against the dtype it
/// takes (exact for i32 and bool).
void checkPadValue(double v, DType t, llvm::StringRef op = "pad");

} // namespace minijit::detail
