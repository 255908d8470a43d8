//===- tests/gpu/MutationTest.cpp - the differential check catches known miscompiles ===//
// Each mutation of compiler/Mutation.h in turn ($MINIJIT_MUTATION), over
// random graphs: on a GPU the run must flag a graph for every one (a check
// that cannot fail is no check). Without a GPU the graphs are compiled and
// the test checks that every mutation still changes some kernel.
// MINIJIT_MUTATION_GRAPHS sets the graphs per mutation (default 60).
//===----------------------------------------------------------------------===//
#include "tests/gpu/GpuTest.h"
#include "tests/support/RandomRun.h"

#include "compiler/Mutation.h"

#include <cstdlib>

namespace minijit {
namespace {

class Mutations : public GpuTest {};

/// Sets $MINIJIT_MUTATION for one scope.
struct ScopedMutation {
  explicit ScopedMutation(Mutation m) { setenv("MINIJIT_MUTATION", mutationName(m).data(), 1); }
  ~ScopedMutation() { unsetenv("MINIJIT_MUTATION"); }
};

TEST_F(Mutations, EveryMutationIsCaught) {
  RandomRunOptions o;
  o.count = 60;
  if (const char *n = std::getenv("MINIJIT_MUTATION_GRAPHS"))
    o.count = std::strtoull(n, nullptr, 10);
  if (!Gpu) // enough to see every mutation change a kernel
    o.count = std::min<uint64_t>(o.count, 12);
  o.first = 1;
  o.stopAtFirst = true;
  o.graph.allowHalf = true;
  unsigned killed = 0;
  std::string report;
  for (Mutation m : allMutations()) {
    ScopedMutation scoped(m);
    unsigned before = mutationSites();
    std::string log;
    llvm::raw_string_ostream os(log);
    RandomRunSummary s = runRandomGraphs(o, Gpu ? &*Gpu : nullptr, os);
    EXPECT_GT(mutationSites(), before) << mutationName(m).str() << " changed no kernel";
    if (!Gpu)
      continue;
    bool caught = !s.findings.empty();
    killed += caught;
    report += "  " + mutationName(m).str() +
              (caught ? ": caught at seed " + std::to_string(s.findings.front().seed)
                      : ": not caught in " + std::to_string(s.graphs) + " graphs") +
              "\n";
    EXPECT_TRUE(caught) << mutationName(m).str() << " survived " << s.graphs << " graphs";
  }
  MJ_REQUIRE_GPU();
  std::printf("[ mutations ] %u of %zu caught\n%s", killed, allMutations().size(), report.c_str());
}

TEST_F(Mutations, NoMutationNoFinding) {
  // The control: the same graphs without a mutation pass.
  RandomRunOptions o;
  o.count = 60;
  if (const char *n = std::getenv("MINIJIT_MUTATION_GRAPHS"))
    o.count = std::strtoull(n, nullptr, 10);
  o.graph.allowHalf = true;
  MJ_REQUIRE_GPU();
  std::string log;
  llvm::raw_string_ostream os(log);
  RandomRunSummary s = runRandomGraphs(o, &*Gpu, os);
  EXPECT_TRUE(s.findings.empty()) << s.line(o.first) << "\n" << os.str();
}

} // namespace
} // namespace minijit
