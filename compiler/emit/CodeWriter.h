//===- compiler/emit/CodeWriter.h - lines, scopes and unique names -*- C++ -*-===//
// The text every template writes goes through a CodeWriter: indented lines,
// `{ ... }` scopes, and one rule for naming locals so that no two share a name
// and none is a keyword, a CUDA built-in or one of the emitter's own locals.
// Text is only ever appended.
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringSet.h"

#include <string>

namespace minijit {

class CodeWriter {
public:
  /// One line at the current indentation.
  void line(const std::string &s);
  /// `s {`, then one level deeper.
  void open(const std::string &s);
  /// One level back, then `}` (or `close`, e.g. "};" after a lambda).
  void close(const std::string &closing = "}");
  /// Text as is (the signature, the kernel's closing brace).
  void raw(const std::string &s) { Out += s; }
  void setIndent(int levels) { Indent = levels; }

  /// Marks `name` as taken (kernel parameters, the values' names).
  void reserve(const std::string &name) { Used.insert(name); }
  /// `base`, or `base` followed by the first number that makes it unused and
  /// not reserved (isReservedName); the result is then taken.
  std::string unique(const std::string &base);

  const std::string &text() const { return Out; }

private:
  std::string Out;
  int Indent = 0;
  llvm::StringSet<> Used;
};

} // namespace minijit
