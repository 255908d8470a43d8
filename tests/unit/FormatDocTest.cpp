// docs/FORMAT.md against ir/Ops.def: one section per op, no section for an op
// that does not exist, an example in every section, and every example parses.
#include "ir/Error.h"
#include "ir/Op.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

using namespace minijit;

namespace {

std::string readFormatDoc() {
  std::ifstream in(std::string(MINIJIT_SOURCE_DIR) + "/docs/FORMAT.md");
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Section {
  std::string op;       ///< the name in "### `op`"
  unsigned line = 0;    ///< of the heading
  std::vector<std::string> examples;
};

struct Doc {
  std::vector<Section> ops;           ///< the sections under "## Ops", in order
  std::vector<std::pair<unsigned, std::string>> examples; ///< every ```mj block, with its first line
};

/// Splits FORMAT.md into its op sections and its `mj` examples.
Doc splitDoc(const std::string &text) {
  Doc d;
  std::istringstream in(text);
  std::string line, block;
  unsigned n = 0, blockLine = 0;
  bool inOps = false, inBlock = false;
  while (std::getline(in, line)) {
    ++n;
    if (inBlock) {
      if (line == "```") {
        inBlock = false;
        d.examples.push_back({blockLine, block});
        if (inOps && !d.ops.empty())
          d.ops.back().examples.push_back(block);
        continue;
      }
      block += line + "\n";
      continue;
    }
    if (line == "```mj") {
      inBlock = true;
      block.clear();
      blockLine = n + 1;
      continue;
    }
    if (line.rfind("## ", 0) == 0)
      inOps = line == "## Ops";
    if (inOps && line.rfind("### ", 0) == 0) {
      std::string name = line.substr(4);
      if (name.size() >= 2 && name.front() == '`' && name.back() == '`')
        name = name.substr(1, name.size() - 2);
      d.ops.push_back({name, n, {}});
    }
  }
  return d;
}

std::set<std::string> opsOfOpsDef() {
  std::set<std::string> ops;
  for (unsigned i = 0; i < kNumOps; ++i)
    ops.insert(std::string(opName(static_cast<OpKind>(i))));
  return ops;
}

} // namespace

TEST(FormatDoc, EveryOpHasASection) {
  Doc d = splitDoc(readFormatDoc());
  ASSERT_FALSE(d.ops.empty()) << "docs/FORMAT.md has no '## Ops' section with '### `op`' headings";
  std::set<std::string> documented;
  for (const Section &s : d.ops)
    documented.insert(s.op);
  for (const std::string &op : opsOfOpsDef())
    EXPECT_TRUE(documented.count(op)) << "op '" << op << "' of ir/Ops.def has no section in "
                                      << "docs/FORMAT.md";
}

TEST(FormatDoc, EverySectionIsAnOp) {
  Doc d = splitDoc(readFormatDoc());
  std::set<std::string> ops = opsOfOpsDef();
  std::map<std::string, unsigned> seen;
  for (const Section &s : d.ops) {
    EXPECT_TRUE(ops.count(s.op)) << "docs/FORMAT.md:" << s.line << ": '" << s.op
                                 << "' is not an op of ir/Ops.def";
    EXPECT_EQ(seen.count(s.op), 0u) << "docs/FORMAT.md:" << s.line << ": '" << s.op
                                    << "' has a section already (line " << seen[s.op] << ")";
    seen[s.op] = s.line;
  }
}

TEST(FormatDoc, EverySectionShowsItsOp) {
  Doc d = splitDoc(readFormatDoc());
  for (const Section &s : d.ops) {
    ASSERT_FALSE(s.examples.empty()) << "docs/FORMAT.md:" << s.line << ": '" << s.op
                                     << "' has no ```mj example";
    if (s.op == "input" || s.op == "constant")
      continue; // arguments and literals are not statements
    bool uses = false;
    for (const std::string &e : s.examples)
      uses |= e.find("= " + s.op + " ") != std::string::npos;
    EXPECT_TRUE(uses) << "docs/FORMAT.md:" << s.line << ": the example of '" << s.op
                      << "' has no statement `%x = " << s.op << " ...`";
  }
}

TEST(FormatDoc, EveryExampleParses) {
  Doc d = splitDoc(readFormatDoc());
  ASSERT_GT(d.examples.size(), opsOfOpsDef().size());
  for (const auto &[line, text] : d.examples) {
    try {
      std::vector<Graph> gs = parseGraphs(text, "FORMAT.md example at line " + std::to_string(line));
      EXPECT_FALSE(gs.empty());
    } catch (const ParseError &e) {
      ADD_FAILURE() << e.what();
    }
  }
}

TEST(FormatDoc, TheCheckerFindsAMissingAndAnUnknownOp) {
  std::string doc = "## Ops\n\n### `exp`\n\n```mj\ngraph g(%x: f32[2]) {\n  %y = exp %x\n  "
                    "return %y\n}\n```\n\n### `softmax`\n\n## Next\n\n### `sin`\n";
  Doc d = splitDoc(doc);
  ASSERT_EQ(d.ops.size(), 2u) << "a heading after the Ops section is not an op";
  EXPECT_EQ(d.ops[0].op, "exp");
  EXPECT_EQ(d.ops[0].examples.size(), 1u);
  EXPECT_EQ(d.ops[1].op, "softmax");
  EXPECT_EQ(opsOfOpsDef().count("softmax"), 0u);
  EXPECT_EQ(d.examples.size(), 1u);
}
