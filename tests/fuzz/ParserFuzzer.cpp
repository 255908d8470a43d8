//===- tests/fuzz/ParserFuzzer.cpp - libFuzzer target: the text parser ----===//
// Any bytes: the parser returns graphs that verify and round-trip through the
// printer, or throws ParseError. Anything else (a crash, a hang, another
// exception, a graph that does not verify) is a bug.
//===----------------------------------------------------------------------===//
#include "ir/Error.h"
#include "ir/Parser.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include <cstdio>
#include <cstdlib>
#include <string>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  std::string text(reinterpret_cast<const char *>(data), size);
  std::vector<minijit::Graph> graphs;
  try {
    graphs = minijit::parseGraphs(text, "fuzz.mj");
  } catch (const minijit::ParseError &) {
    return 0;
  }
  for (const minijit::Graph &g : graphs) {
    minijit::verifyGraph(g); // throws (and so aborts the fuzzer) if it does not verify
    std::string once = minijit::printGraph(g);
    std::vector<minijit::Graph> again = minijit::parseGraphs(once, "printed.mj");
    if (again.size() != 1 || minijit::printGraph(again[0]) != once) {
      std::fprintf(stderr, "round trip differs:\n%s\n", once.c_str());
      std::abort();
    }
  }
  return 0;
}
