// The text parser: round trips of every sample, literals, exact error locations, fuzzing.
#include "ir/Parser.h"
#include "ir/Error.h"
#include "ir/Printer.h"
#include "ir/Verifier.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/MemoryBuffer.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

using namespace minijit;

namespace {

/// The samples folder: $MINIJIT_SAMPLES, the source tree's (a build
/// directory may be anywhere), or samples/ found from the working directory;
/// empty when none is found.
std::string samplesDir() {
  std::vector<std::string> candidates;
  if (const char *env = std::getenv("MINIJIT_SAMPLES"); env && *env)
    candidates.push_back(env);
  candidates.push_back(MINIJIT_SOURCE_DIR "/samples");
  for (const char *rel : {"samples", "../samples", "../../samples", "../../../samples"})
    candidates.push_back(rel);
  for (const std::string &c : candidates)
    if (llvm::sys::fs::exists(c + "/softmax.mj"))
      return c;
  return "";
}

std::vector<std::string> sampleFiles() {
  std::vector<std::string> files;
  std::string dir = samplesDir();
  if (dir.empty())
    return files;
  std::error_code ec;
  for (llvm::sys::fs::directory_iterator it(dir, ec), end; it != end && !ec; it.increment(ec))
    if (llvm::sys::path::extension(it->path()) == ".mj")
      files.push_back(it->path());
  std::sort(files.begin(), files.end());
  return files;
}

std::string readFile(const std::string &path) {
  auto buf = llvm::MemoryBuffer::getFile(path);
  return buf ? (*buf)->getBuffer().str() : std::string();
}

/// what() of the ParseError that parsing `text` (as "t.mj") throws.
std::string parseErrorOf(const std::string &text) {
  try {
    parseGraphs(text, "t.mj");
  } catch (const ParseError &e) {
    return e.what();
  } catch (const std::exception &e) {
    ADD_FAILURE() << "not a ParseError: " << e.what();
    return "";
  }
  ADD_FAILURE() << "parsed without error:\n" << text;
  return "";
}

bool hasScalarReduction(const Graph &g) {
  for (const Node &n : g.nodes())
    if (n.cls() == OpClass::Reduce && g.node(n.operands[0]).shape.rank() == 0)
      return true;
  return false;
}

/// Parses `text`; anything but a ParseError is a failure. Graphs that parse
/// must print, parse back to the same text and verify.
void parseMustNotCrash(const std::string &text) {
  std::vector<Graph> graphs;
  try {
    graphs = parseGraphs(text, "fuzz.mj");
  } catch (const ParseError &e) {
    std::string what = e.what();
    ASSERT_EQ(what.rfind("fuzz.mj:", 0), 0u) << what;
    ASSERT_NE(what.find(": error: "), std::string::npos) << what;
    ASSERT_GE(e.line(), 1u) << what;
    ASSERT_GE(e.column(), 1u) << what;
    return;
  } catch (const std::exception &e) {
    FAIL() << "parser threw a non-ParseError (" << e.what() << ") on:\n" << text;
  }
  for (const Graph &g : graphs) {
    if (hasScalarReduction(g))
      continue; // see Verifier.AcceptsAReductionOfAScalar (a known bug)
    std::string printed = printGraph(g);
    std::vector<Graph> again;
    ASSERT_NO_THROW(again = parseGraphs(printed, "printed.mj")) << printed;
    ASSERT_EQ(again.size(), 1u);
    ASSERT_EQ(printGraph(again[0]), printed);
    ASSERT_NO_THROW(verifyGraph(g)) << printed;
  }
}

const char *const kHeader = "graph g(%x: f32[4], %h: f16[4], %c: bool[4]) {\n";

} // namespace

// ---- round trips

TEST(Parser, SamplesAreFound) {
  ASSERT_FALSE(samplesDir().empty())
      << "no samples/ folder found from the working directory; set MINIJIT_SAMPLES";
  EXPECT_GE(sampleFiles().size(), 5u);
}

TEST(Parser, EverySampleRoundTripsExactly) {
  std::vector<std::string> files = sampleFiles();
  ASSERT_FALSE(files.empty());
  for (const std::string &f : files) {
    std::vector<Graph> graphs = parseFile(f);
    ASSERT_FALSE(graphs.empty()) << f;
    for (const Graph &g : graphs) {
      std::string once = printGraph(g);
      std::vector<Graph> again = parseGraphs(once, f);
      ASSERT_EQ(again.size(), 1u) << f;
      EXPECT_EQ(printGraph(again[0]), once) << f;
      EXPECT_NO_THROW(verifyGraph(g)) << f;
    }
  }
}

TEST(Parser, SoftmaxSampleHasItsCanonicalForm) {
  std::string dir = samplesDir();
  ASSERT_FALSE(dir.empty());
  std::vector<Graph> graphs = parseFile(dir + "/softmax.mj");
  ASSERT_EQ(graphs.size(), 1u);
  EXPECT_EQ(printGraph(graphs[0]), "graph softmax(%x: f32[4096, 1024]) {\n"
                                   "  %m = max %x axes=[1] keepdim=true : f32[4096, 1]\n"
                                   "  %d = sub %x, %m : f32[4096, 1024]\n"
                                   "  %e = exp %d : f32[4096, 1024]\n"
                                   "  %s = sum %e axes=[1] keepdim=true : f32[4096, 1]\n"
                                   "  %y = div %e, %s : f32[4096, 1024]\n"
                                   "  return %y\n"
                                   "}\n");
}

TEST(Parser, SeveralGraphsCommentsAndLiterals) {
  const char *text = "# leading comment\n"
                     "graph a(%x: f32[4], %c: bool[4]) {   # trailing comment\n"
                     "  %p = add %x, inf\n"
                     "  %q = add %p, -inf  # another\n"
                     "  %r = mul %q, nan\n"
                     "  %s = add %r, 1e-05\n"
                     "  %t = and %c, true\n"
                     "  %u = or %t, false\n"
                     "  %v = where %u, %s, -2.5\n"
                     "  return %v, %t\n"
                     "}\n"
                     "graph b(%i: i32[2, 3]) {\n"
                     "  %j = add %i, -2147483648 : i32[2, 3]\n"
                     "  %k = mul 3, %j\n"
                     "  return %k\n"
                     "}\n";
  std::vector<Graph> graphs = parseGraphs(text, "t.mj");
  ASSERT_EQ(graphs.size(), 2u);
  EXPECT_EQ(printGraph(graphs[0]), "graph a(%x: f32[4], %c: bool[4]) {\n"
                                   "  %p = add %x, inf : f32[4]\n"
                                   "  %q = add %p, -inf : f32[4]\n"
                                   "  %r = mul %q, nan : f32[4]\n"
                                   "  %s = add %r, 1e-05 : f32[4]\n"
                                   "  %t = and %c, true : bool[4]\n"
                                   "  %u = or %t, false : bool[4]\n"
                                   "  %v = where %u, %s, -2.5 : f32[4]\n"
                                   "  return %v, %t\n"
                                   "}\n");
  EXPECT_EQ(printGraph(graphs[1]), "graph b(%i: i32[2, 3]) {\n"
                                   "  %j = add %i, -2147483648 : i32[2, 3]\n"
                                   "  %k = mul 3, %j : i32[2, 3]\n"
                                   "  return %k\n"
                                   "}\n");
  for (const Graph &g : graphs)
    EXPECT_EQ(printGraph(parseGraphs(printGraph(g))[0]), printGraph(g));
}

TEST(Parser, LiteralValuesAndDTypes) {
  std::vector<Graph> gs = parseGraphs("graph g(%h: f16[2]) {\n"
                                      "  %a = add %h, 1e-05\n"
                                      "  %b = mul %a, +2\n"
                                      "  return %b\n"
                                      "}\n");
  const Graph &g = gs[0];
  const Node &a = g.node(*g.lookup("a"));
  const Node &lit = g.node(a.operands[1]);
  EXPECT_EQ(lit.op, OpKind::Constant);
  EXPECT_EQ(lit.dtype, DType::F16);
  EXPECT_EQ(lit.value, static_cast<double>(1e-05f));
  EXPECT_EQ(g.node(g.node(*g.lookup("b")).operands[1]).value, 2.0);
}

TEST(Parser, DefaultsAreFilledIn) {
  std::vector<Graph> gs = parseGraphs("graph g(%x: f32[2, 3]) {\n"
                                      "  %s = sum %x\n"
                                      "  %m = max %x axes=[-1]\n"
                                      "  return %s, %m\n"
                                      "}\n");
  const Graph &g = gs[0];
  const Node &s = g.node(*g.lookup("s"));
  EXPECT_EQ(s.shape, Shape());
  EXPECT_EQ(s.axes.size(), 2u);
  EXPECT_FALSE(s.keepdim);
  EXPECT_EQ(g.node(*g.lookup("m")).shape, Shape({2}));
  EXPECT_EQ(g.outputs().size(), 2u);
}

TEST(Parser, ScalarReductionRoundTrips) {
  // (like Graph::add) rejects: print(parse(text)) does not parse back.
  std::vector<Graph> gs = parseGraphs("graph s(%x: f32[]) {\n  %y = sum %x\n  return %y\n}\n");
  std::string printed = printGraph(gs[0]);
  EXPECT_NO_THROW(parseGraphs(printed)) << printed;
}

// ---- errors, with their exact location

TEST(ParseErrors, EmptyFile) {
  EXPECT_EQ(parseErrorOf(""), "t.mj:1:1: error: expected 'graph': the file holds no graph");
  EXPECT_EQ(parseErrorOf("# only a comment\n\n"),
            "t.mj:3:1: error: expected 'graph': the file holds no graph");
}

TEST(ParseErrors, ErrorAccessorsSplitTheLocation) {
  try {
    parseGraphs("graph g(%x: f32[4]) {\n  %y = exp %z\n  return %y\n}\n", "dir/f.mj");
    FAIL() << "no error";
  } catch (const ParseError &e) {
    EXPECT_EQ(e.file(), "dir/f.mj");
    EXPECT_EQ(e.line(), 2u);
    EXPECT_EQ(e.column(), 12u);
    EXPECT_EQ(e.message(), "%z is not defined");
    EXPECT_STREQ(e.what(), "dir/f.mj:2:12: error: %z is not defined");
  }
}

TEST(ParseErrors, TruncatedStatement) {
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  %y = add %x,"),
            "t.mj:2:15: error: expected an operand (%name or a number), got end of file");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  %y ="),
            "t.mj:2:7: error: expected an op name, got end of file");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4"),
            "t.mj:1:18: error: expected ',' or ']', got end of file");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  %y = exp %x\n  return %y\n"),
            "t.mj:4:1: error: expected '}' after the return, got end of file");
}

TEST(ParseErrors, UnknownOpWithAHint) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exq %x\n  return %y\n}\n"),
            "t.mj:2:8: error: unknown op 'exq'; did you mean 'exp'?");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = maximun %x, %x\n  return %y\n}\n"),
            "t.mj:2:8: error: unknown op 'maximun'; did you mean 'maximum'?");
}

TEST(ParseErrors, UnknownOpWithoutAHint) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = frobnicate %x\n  return %y\n}\n"),
            "t.mj:2:8: error: unknown op 'frobnicate' (the ops: iota full neg abs exp exp2 expm1 "
            "log log2 log1p sqrt rsqrt sin cos tanh sigmoid erf relu recip floor ceil round_tf32 "
            "not add sub mul div pow maximum minimum eq ne lt le gt ge and or where cast sum mean "
            "max min prod argmax argmin concat take take_along_axis cumsum cumprod reshape "
            "permute broadcast slice pad flip matmul rand randn dropout grad vjp)");
  // "input" and "constant" are not spellable.
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = constant %x\n  return %y\n}\n")
                .rfind("t.mj:2:8: error: unknown op 'constant'", 0),
            0u);
}

TEST(ParseErrors, CompositesAreNotOps) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = softmax %x\n  return %y\n}\n"),
            "t.mj:2:8: error: unknown op 'softmax'; softmax is not an op but is written with max, "
            "sub, exp, sum and div (docs/FORMAT.md; the C++ API builds it as softmax(x))");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = layer_norm %x\n  return %y\n}\n"),
            "t.mj:2:8: error: unknown op 'layer_norm'; layer_norm is not an op but is written "
            "with mean, sub, mul, add and rsqrt (docs/FORMAT.md; the C++ API builds it as "
            "layerNorm(x))");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = silu %x\n  return %y\n}\n"),
            "t.mj:2:8: error: unknown op 'silu'; silu is not an op but is written with sigmoid "
            "and mul (docs/FORMAT.md; the C++ API builds it as silu(x))")
      << "not 'did you mean sin'";
}

TEST(ParseErrors, MissingCommaBetweenOperands) {
  // Found by issue 19: "add: expects 2 operands, got 1", or "%h is already defined".
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = mul %x %x\n  return %y\n}\n"),
            "t.mj:2:15: error: expected ',' before the next operand of mul, got '%x'");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = mul %x 2\n  return %y\n}\n"),
            "t.mj:2:15: error: expected ',' before the next operand of mul, got '2'");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = where %c, %x %x\n  return %y\n}\n"),
            "t.mj:2:21: error: expected ',' before the next operand of where, got '%x'");
  // The next statement's %name (followed by '=') is not an operand.
  std::vector<Graph> gs =
      parseGraphs(std::string(kHeader) + "  %y = exp %x %z = exp %y\n  return %z\n}\n", "t.mj");
  ASSERT_EQ(gs.size(), 1u);
}

TEST(ParseErrors, UndefinedValue) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %z\n  return %y\n}\n"),
            "t.mj:2:12: error: %z is not defined");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %x\n  return %w\n}\n"),
            "t.mj:3:10: error: %w is not defined");
}

TEST(ParseErrors, RedefinedValue) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %x\n  %y = exp %y\n  return %y\n}\n"),
            "t.mj:3:3: error: %y is already defined (line 2)");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %x = exp %x\n  return %x\n}\n"),
            "t.mj:2:3: error: %x is already defined (line 1)");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4],\n        %x: f32[4]) {\n  return %x\n}\n"),
            "t.mj:2:9: error: %x is already defined (line 1)");
}

TEST(ParseErrors, RedefinedGraph) {
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[4]) {\n  return %x\n}\n"
                         "graph g(%x: f32[4]) {\n  return %x\n}\n"),
            "t.mj:4:7: error: graph 'g' is defined twice (first on line 1)");
}

TEST(ParseErrors, BadDims) {
  EXPECT_NO_THROW(parseGraphs("graph g(%x: f32[4, 0]) {\n  return %x\n}\n", "t.mj"))
      << "an empty tensor (issue 42)";
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[-4]) {\n  return %x\n}\n"),
            "t.mj:1:16: error: type: dimension 0 of [-4] is -4; dimensions must be at least 0");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[2.5]) {\n  return %x\n}\n"),
            "t.mj:1:17: error: expected an integer dimension, got '2.5'");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[1,1,1,1,1,1,1,1,1]) {\n  return %x\n}\n"),
            "t.mj:1:16: error: type: rank 9 exceeds the maximum of 8");
  EXPECT_EQ(parseErrorOf("graph g(%x: f64[4]) {\n  return %x\n}\n"),
            "t.mj:1:13: error: unknown dtype 'f64' (expected f32, f16, bf16, i32 or bool)");
}

TEST(ParseErrors, HugeNumbers) {
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[99999999999999999999]) {\n  return %x\n}\n"),
            "t.mj:1:17: error: dimension 99999999999999999999 is too large");
  EXPECT_EQ(parseErrorOf("graph g(%x: f32[2199023255552]) {\n  return %x\n}\n"),
            "t.mj:1:16: error: type: shape [2199023255552] has more than 2^40 elements, the "
            "largest tensor minijit accepts");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = add %x, 1e999\n  return %y\n}\n"),
            "t.mj:2:16: error: literal 1e999 is out of range");
  std::string overflow =
      parseErrorOf(std::string(kHeader) + "  %y = add %x, 1e39\n  return %y\n}\n");
  EXPECT_EQ(overflow.rfind("t.mj:2:16: error: literal ", 0), 0u) << overflow;
  EXPECT_NE(overflow.find("overflows f32"), std::string::npos) << overflow;
  EXPECT_EQ(parseErrorOf("graph g(%i: i32[4]) {\n  %y = add %i, 3000000000\n  return %y\n}\n")
                .rfind("t.mj:2:16: error: literal ", 0),
            0u);
}

TEST(ParseErrors, NonUtf8Byte) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  \xff\xfe = exp %x\n"),
            "t.mj:2:3: error: unexpected character '\\xFF'");
  EXPECT_EQ(parseErrorOf("graph g\x01"), "t.mj:1:8: error: unexpected character '\\x01'");
}

TEST(ParseErrors, MissingReturn) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %x\n}\n"),
            "t.mj:3:1: error: graph 'g' has no return");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %x\n"),
            "t.mj:3:1: error: graph 'g' has no return");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  return\n}\n"),
            "t.mj:3:1: error: expected a value (%name) to return, got '}'");
}

TEST(ParseErrors, AttributeErrors) {
  std::string h = kHeader;
  EXPECT_EQ(parseErrorOf(h + "  %y = sum %x foo=1\n  return %y\n}\n"),
            "t.mj:2:15: error: unknown attribute 'foo' for sum (expected: axes, keepdim)");
  EXPECT_EQ(parseErrorOf(h + "  %y = exp %x axes=[0]\n  return %y\n}\n"),
            "t.mj:2:15: error: unknown attribute 'axes' for exp (expected: none)");
  EXPECT_EQ(parseErrorOf(h + "  %y = sum %x axes=[0] axes=[0]\n  return %y\n}\n"),
            "t.mj:2:24: error: attribute 'axes' is given twice");
  EXPECT_EQ(parseErrorOf(h + "  %y = reshape %x\n  return %y\n}\n"),
            "t.mj:2:8: error: reshape needs the attribute shape=...");
  EXPECT_EQ(parseErrorOf(h + "  %y = permute %x shape=[4]\n  return %y\n}\n"),
            "t.mj:2:19: error: unknown attribute 'shape' for permute (expected: perm)");
  EXPECT_EQ(parseErrorOf(h + "  %y = sum %x keepdim=maybe\n  return %y\n}\n"),
            "t.mj:2:23: error: expected true or false, got 'maybe'");
  EXPECT_EQ(parseErrorOf(h + "  %y = cast %x to=f64\n  return %y\n}\n"),
            "t.mj:2:19: error: unknown dtype 'f64' (expected f32, f16, bf16, i32 or bool)");
  EXPECT_EQ(parseErrorOf(h + "  %y = sum %x axes=[2]\n  return %y\n}\n"),
            "t.mj:2:8: error: sum: axis 2 is out of range for rank 1 (valid: -1..0)");
  EXPECT_EQ(parseErrorOf(h + "  %y = reshape %x shape=[4, 0]\n  return %y\n}\n"),
            "t.mj:2:8: error: reshape: cannot reshape [4] (4 elements) to [4, 0] (0 elements)");
  EXPECT_EQ(parseErrorOf(h + "  %y = reshape %x shape=[4, -3]\n  return %y\n}\n"),
            "t.mj:2:25: error: reshape: dimension 1 of [4, -3] is -3; dimensions must be at least "
            "0");
}

TEST(ParseErrors, DeclaredTypeMismatch) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %x : f16[4]\n  return %y\n}\n"),
            "t.mj:2:17: error: declared type f16[4] does not match the inferred type f32[4]");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %x : f32[2, 2]\n  return %y\n}\n"),
            "t.mj:2:17: error: declared type f32[2, 2] does not match the inferred type f32[4]");
}

TEST(ParseErrors, GraphErrorsPointAtTheOp) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = add %x, %h\n  return %y\n}\n"),
            "t.mj:2:8: error: add: operands have different dtypes f32 (%x) and f16 (%h); insert a "
            "cast (e.g. `cast %h to=f32`)");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = where %x, %x, %x\n  return %y\n}\n"),
            "t.mj:2:8: error: where: condition %x has dtype f32 but must be bool; compare first "
            "(e.g. `ne %x, 0`)");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = exp %x, %x\n  return %y\n}\n"),
            "t.mj:2:8: error: exp: expects 1 operand, got 2");
}

TEST(ParseErrors, LiteralsNeedATensorBesideThem) {
  std::string h = kHeader;
  EXPECT_EQ(parseErrorOf(h + "  %y = exp 1\n  return %y\n}\n"),
            "t.mj:2:12: error: exp: operand 0 must be a value (%name), not a literal");
  EXPECT_EQ(parseErrorOf(h + "  %y = add 1, 2\n  return %y\n}\n"),
            "t.mj:2:12: error: add: a literal needs a tensor operand beside it to take its dtype "
            "from");
  EXPECT_EQ(parseErrorOf(h + "  %y = add %x, true\n  return %y\n}\n"),
            "t.mj:2:16: error: literal true is a bool but the operand is f32");
}

TEST(ParseErrors, TooManyOperandsPointsAtTheExtraOperand) {
  // `return` on the next line, 3:3) instead of at the fourth operand (2:24).
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = add %x, %x, %x, %x\n  return %y\n}\n"),
            "t.mj:2:24: error: add: too many operands");
}

TEST(ParseErrors, TooManyOperands) {
  std::string msg =
      parseErrorOf(std::string(kHeader) + "  %y = add %x, %x, %x, %x\n  return %y\n}\n");
  EXPECT_NE(msg.find(": error: add: too many operands"), std::string::npos) << msg;
}

TEST(ParseErrors, LexicalErrors) {
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  % = exp %x\n"),
            "t.mj:2:3: error: expected a value name after '%'");
  EXPECT_EQ(parseErrorOf(std::string(kHeader) + "  %y = add %x, -\n"),
            "t.mj:2:16: error: unexpected character '-'");
  EXPECT_EQ(parseErrorOf("graph 1g(%x: f32[4]) {\n  return %x\n}\n"),
            "t.mj:1:7: error: expected a graph name, got '1'");
  EXPECT_EQ(parseErrorOf("graf g(%x: f32[4]) {\n  return %x\n}\n"),
            "t.mj:1:1: error: expected 'graph', got 'graf'");
}

TEST(ParseErrors, UnreadableFile) {
  try {
    parseFile("/nonexistent/dir/x.mj");
    FAIL() << "no error";
  } catch (const ParseError &e) {
    EXPECT_EQ(e.line(), 0u);
    EXPECT_EQ(
        std::string(e.what()).rfind("/nonexistent/dir/x.mj: error: cannot read the file: ", 0), 0u)
        << e.what();
  }
}

// ---- fuzzing: only ParseError, never a crash or another exception

TEST(ParserFuzz, RandomBytes) {
  std::mt19937 rng(12345);
  const std::string alphabet = "graph%(){}[],:=#\n -+.0123456789eEfinatrusmxbdlopw_\t\r";
  for (int iter = 0; iter < 3000; ++iter) {
    size_t len = rng() % 160;
    std::string s;
    for (size_t i = 0; i < len; ++i)
      s += (rng() % 4 == 0) ? static_cast<char>(rng() % 256) : alphabet[rng() % alphabet.size()];
    parseMustNotCrash(s);
    if (HasFatalFailure())
      return;
  }
}

TEST(ParserFuzz, EveryTruncationOfEverySample) {
  std::vector<std::string> files = sampleFiles();
  ASSERT_FALSE(files.empty());
  for (const std::string &f : files) {
    std::string text = readFile(f);
    ASSERT_FALSE(text.empty()) << f;
    for (size_t n = 0; n <= text.size(); ++n) {
      parseMustNotCrash(text.substr(0, n));
      if (HasFatalFailure())
        return;
    }
  }
}

TEST(ParserFuzz, RandomMutationsOfSamples) {
  std::vector<std::string> files = sampleFiles();
  ASSERT_FALSE(files.empty());
  std::mt19937 rng(777);
  for (int iter = 0; iter < 3000; ++iter) {
    std::string text = readFile(files[rng() % files.size()]);
    int edits = 1 + rng() % 3;
    for (int e = 0; e < edits && !text.empty(); ++e) {
      size_t at = rng() % text.size();
      switch (rng() % 3) {
      case 0:
        text[at] = static_cast<char>(rng() % 256);
        break;
      case 1:
        text.erase(at, 1 + rng() % 8);
        break;
      default:
        text.insert(at, 1, "%[]{},:=-.0e#\n"[rng() % 14]);
        break;
      }
    }
    parseMustNotCrash(text);
    if (HasFatalFailure())
      return;
  }
}

TEST(ParserFuzz, RandomTokenSoup) {
  // Sequences of valid tokens reach deeper than random bytes: most statements
  // lex, many parse, and every graph that parses must print and parse back.
  static const char *const tokens[] = {
      "graph",   "g",         "h",      "(",   ")",    "{",       "}",   "[",     "]",    ",",
      ":",       "=",         "\n",     "%x",  "%y",   "%z",      "%c",  "f32",   "f16",  "bf16",
      "i32",     "bool",      "1",      "4",   "0",    "-1",      "2.5", "1e-05", "inf",  "-inf",
      "nan",     "true",      "false",  "add", "exp",  "sum",     "max", "where", "cast", "reshape",
      "permute", "broadcast", "matmul", "lt",  "axes", "keepdim", "to",  "shape", "perm", "return"};
  std::mt19937 rng(4242);
  const size_t n = sizeof(tokens) / sizeof(tokens[0]);
  for (int iter = 0; iter < 5000; ++iter) {
    std::string s = (iter % 2) ? "graph g(%x: f32[4], %c: bool[4]) {\n  %y = " : "";
    int len = static_cast<int>(rng() % 40);
    for (int i = 0; i < len; ++i) {
      s += tokens[rng() % n];
      s += ' ';
    }
    if (iter % 4 == 1)
      s += "\n  return %y\n}\n";
    parseMustNotCrash(s);
    if (HasFatalFailure())
      return;
  }
}
