//===- ir/Parser.h - read the text format ----------------------*- C++ -*-===//
// Reads `graph NAME(ARGS) { ... }` blocks (see DESIGN.md) into Graphs. Any
// input, whatever its bytes, gives graphs that verify or a ParseError
// "FILE:LINE:COL: error: MSG"; it never crashes.
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Graph.h"

#include <string_view>
#include <vector>

namespace minijit {

/// Parses every graph in `text`. `file` names the text in error messages.
/// Throws ParseError.
std::vector<Graph> parseGraphs(std::string_view text, std::string_view file = "<input>");

/// Reads and parses a file. Throws ParseError (with line 0 when the file
/// cannot be read).
std::vector<Graph> parseFile(std::string_view path);

} // namespace minijit
