//===- compiler/templates/pointwise/Pointwise.cpp - one vector of elements per thread ---===//
// Each thread takes `items` vectors of `vec` elements, a block of `block`
// threads after another; a last scalar loop covers the elements the vectors
// leave.
//===----------------------------------------------------------------------===//
#include "compiler/templates/pointwise/PointwiseInternal.h"

namespace minijit {

namespace {

std::string vectorComment(unsigned vec) {
  if (vec == 1)
    return " // element index";
  return " // vector index: elements vi * " + std::to_string(vec) + " .. vi * " +
         std::to_string(vec) + " + " + std::to_string(vec - 1);
}

} // namespace

void emitPointwise(KernelEmitter &e, const PointwiseSchedule &s) {
  CodeWriter &w = e.W;
  const LoweredKernel &k = e.K;
  const std::string &Idx = e.Idx;
  unsigned b = s.block;
  LaneCtx lc;
  lc.vec = s.vec;
  lc.x = k.elem;
  lc.extent = s.numVec * s.vec;
  lc.var = s.vec > 1 ? "vi" : "i";
  // A kernel serving many sizes guards every vector and leaves the tail to
  // its launch's size; one size knows whether the grid covers it exactly.
  bool exact = !e.symbolic() && s.numVec % (int64_t(b) * s.items) == 0;
  std::string numVec = e.symbolic() ? (s.vec > 1 ? e.extent() + " / " + std::to_string(s.vec)
                                                 : e.extent())
                                    : std::to_string(s.numVec);
  if (s.items > 1) {
    w.line("const " + Idx + " first = (" + Idx + ")blockIdx.x * " + std::to_string(b * s.items) +
           " + threadIdx.x;");
    w.line("#pragma unroll");
    w.open("for (int item = 0; item < " + std::to_string(s.items) + "; ++item)");
    w.line("const " + Idx + " " + lc.var + " = first + item * " + std::to_string(b) + ";" +
           vectorComment(s.vec));
  } else {
    w.line("const " + Idx + " " + lc.var + " = (" + Idx + ")blockIdx.x * " + std::to_string(b) +
           " + threadIdx.x;" + vectorComment(s.vec));
  }
  if (!exact)
    w.open("if (" + lc.var + " < " + numVec + ")");
  e.elementWork(0, lc, "");
  if (!exact)
    w.close();
  if (s.items > 1)
    w.close();
  // The elements the vectors leave, one per thread of block 0, from `done`.
  auto scalarTail = [&](const std::string &done) {
    w.line("const " + Idx + " i = " + done + " + threadIdx.x;");
    e.elementWork(0, LaneCtx::elements("i", k.elem, k.numel), "");
    w.close();
  };
  if (e.symbolic() && s.vec > 1 && e.K.symbolic->extent.coef % s.vec != 0) {
    w.line("// the elements past the last whole vector (fewer than " + std::to_string(s.vec) +
           "), one per thread");
    w.line("const " + Idx + " done = " + e.extent() + " / " + std::to_string(s.vec) + " * " +
           std::to_string(s.vec) + ";");
    w.open("if (blockIdx.x == 0 && threadIdx.x < " + e.extent() + " - done)");
    scalarTail("done");
  } else if (s.tail && !e.symbolic()) {
    int64_t done = s.numVec * s.vec, rest = k.numel - done;
    w.line("// the last " + std::to_string(rest) +
           (rest == 1 ? " element" : " elements, one per thread"));
    w.open("if (blockIdx.x == 0 && threadIdx.x < " + std::to_string(rest) + ")");
    scalarTail(std::to_string(done));
  }
  w.raw("}\n");
}

} // namespace minijit
