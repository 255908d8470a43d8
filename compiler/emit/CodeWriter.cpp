//===- compiler/emit/CodeWriter.cpp - lines, scopes and unique names ------===//
#include "compiler/emit/CodeWriter.h"

#include "compiler/lower/CudaNames.h"

namespace minijit {

void CodeWriter::line(const std::string &s) { Out += std::string(2 * Indent, ' ') + s + "\n"; }

void CodeWriter::open(const std::string &s) {
  line(s + " {");
  ++Indent;
}

void CodeWriter::close(const std::string &closing) {
  --Indent;
  line(closing);
}

std::string CodeWriter::unique(const std::string &base) {
  std::string n = base;
  for (int i = 1; Used.count(n) || isReservedName(n); ++i)
    n = base + std::to_string(i);
  Used.insert(n);
  return n;
}

} // namespace minijit
