//===- ir/Printer.h - the canonical text form of a graph -------*- C++ -*-===//
// Prints graphs in the text format the parser reads; print(parse(print(g)))
// equals print(g). Literals are printed inline where they are used.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <iosfwd>
#include <string>

namespace minijit {

/// `graph NAME(ARGS) { ... }` with one statement per line and the trailing
/// type of every statement.
std::string printGraph(const Graph &g);
/// Writes printGraph(g) to `os`.
void printGraph(std::ostream &os, const Graph &g);

/// One statement, without indentation or newline: `%y = add %x, 1 : f32[4]`.
std::string nodeText(const Graph &g, ValueId id);
/// How an operand is written: `%name`, or the literal for a constant.
std::string operandText(const Graph &g, ValueId id);
/// `f32[4096, 1024]`.
std::string typeText(DType t, const Shape &s);
/// The shortest text that reads back to the same value of dtype t
/// (`0.5`, `-inf`, `nan`, `3`, `true`).
std::string literalText(double v, DType t);

} // namespace minijit
