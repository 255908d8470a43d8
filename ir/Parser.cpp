//===- ir/Parser.cpp - read the text format -------------------------------===//
// A hand-written lexer and recursive-descent parser. Semantic checks are the
// graph builder's (Graph::add); its GraphErrors come back with the location
// of the statement that caused them.
//===----------------------------------------------------------------------===//
#include "ir/Parser.h"

#include "ir/LexerInternal.h"

#include "ir/Autodiff.h"
#include "ir/Bind.h"
#include "ir/Error.h"
#include "ir/Printer.h"

#include "llvm/ADT/StringMap.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/MemoryBuffer.h"

#include <cerrno>
#include <cmath>
#include <map>
#include <cstdlib>
#include <variant>

namespace minijit {

namespace {

using detail::isDigit;
using detail::isIdentStart;
using detail::isNameChar;
using detail::Lexer;
using detail::shown;
using detail::Tok;
using detail::Token;

/// An operand as written: a value or a literal whose dtype is not known yet.
struct Literal {
  double value;
  bool isBool;
  Token tok;
};
using Operand = std::variant<ValueId, Literal>;

class Parser {
public:
  Parser(llvm::StringRef text, llvm::StringRef file) : Lex(text, file), File(file) { consume(); }

  std::vector<Graph> parseFile() {
    std::vector<Graph> graphs;
    llvm::StringMap<unsigned> seen;
    if (Cur.kind == Tok::Eof)
      error(Cur, "expected 'graph': the file holds no graph");
    while (Cur.kind != Tok::Eof) {
      Token nameTok;
      Graph g = parseGraph(nameTok);
      if (seen.count(g.name()))
        error(nameTok, llvm::formatv("graph '{0}' is defined twice (first on line {1})", g.name(),
                                     seen[g.name()])
                           .str());
      seen[g.name()] = nameTok.line;
      graphs.push_back(std::move(g));
    }
    return graphs;
  }

private:
  [[noreturn]] void error(const Token &t, const std::string &msg) {
    throw ParseError(File.str(), t.line, t.col, msg);
  }
  std::string describe(const Token &t) {
    if (t.kind == Tok::Eof)
      return "end of file";
    if (t.kind == Tok::Value)
      return "'%" + shown(t.text) + "'";
    return "'" + shown(t.text) + "'";
  }
  void consume() { Cur = Lex.next(); }
  /// The token after Cur, without consuming anything.
  Token peek() const {
    Lexer ahead = Lex;
    return ahead.next();
  }
  /// "unknown op 'X'" with the nearest op, a word on composites, or the list.
  static std::string unknownOpMessage(llvm::StringRef name) {
    std::string msg = "unknown op '" + shown(name) + "'";
    // The composites of ir/Builder.h are not ops: say what they are made of.
    static const char *const Composites[][3] = {
        {"softmax", "softmax", "max, sub, exp, sum and div"},
        {"logsoftmax", "logSoftmax", "max, sub, exp, sum and log"},
        {"layernorm", "layerNorm", "mean, sub, mul, add and rsqrt"},
        {"rmsnorm", "rmsNorm", "mul, mean, add and rsqrt"},
        {"gelu", "gelu", "mul, add and erf (or tanh)"},
        {"silu", "silu", "sigmoid and mul"}};
    std::string key = name.lower();
    llvm::erase_value(key, '_');
    for (const auto &c : Composites)
      if (key == c[0])
        return msg + llvm::formatv("; {0} is not an op but is written with {1} (docs/FORMAT.md; "
                                   "the C++ API builds it as {2}(x))",
                                   shown(name), c[2], c[1])
                         .str();
    llvm::StringRef hint = suggestOpName(name);
    if (!hint.empty())
      return msg + "; did you mean '" + hint.str() + "'?";
    msg += " (the ops:";
    for (unsigned i = 0; i < kNumOps; ++i) {
      auto k = static_cast<OpKind>(i);
      if (k != OpKind::Input && k != OpKind::Constant)
        msg += " " + std::string(opName(k));
    }
    return msg + ")";
  }
  Token expect(Tok k, llvm::StringRef what) {
    if (Cur.kind != k)
      error(Cur, llvm::formatv("expected {0}, got {1}", what, describe(Cur)).str());
    Token t = Cur;
    consume();
    return t;
  }
  bool isIdent(llvm::StringRef s) const { return Cur.kind == Tok::Ident && Cur.text == s; }

  /// `true` or `false`, an attribute's value.
  bool parseBool() {
    Token v = expect(Tok::Ident, "true or false");
    if (v.text != "true" && v.text != "false")
      error(v, "expected true or false, got " + describe(v));
    return v.text == "true";
  }

  int64_t parseInt(const Token &t, llvm::StringRef what) {
    llvm::StringRef s = t.text;
    bool neg = s.consume_front("-");
    if (!neg)
      s.consume_front("+");
    if (s.empty() || !llvm::all_of(s, isDigit))
      error(t, llvm::formatv("expected an integer {0}, got {1}", what, describe(t)).str());
    int64_t v = 0;
    for (char c : s) {
      if (v > (int64_t(1) << 50))
        error(t, llvm::formatv("{0} {1} is too large", what, shown(t.text)).str());
      v = v * 10 + (c - '0');
    }
    return neg ? -v : v;
  }

  DimVector parseIntList(llvm::StringRef what) {
    expect(Tok::LBracket, "'['");
    DimVector v;
    if (Cur.kind == Tok::RBracket) {
      consume();
      return v;
    }
    for (;;) {
      Token t = expect(Tok::Number, "an integer " + what.str());
      v.push_back(parseInt(t, what));
      if (v.size() > 64)
        error(t, llvm::formatv("too many entries in the {0} list", what).str());
      if (Cur.kind == Tok::Comma) {
        consume();
        continue;
      }
      expect(Tok::RBracket, "',' or ']'");
      return v;
    }
  }

  /// One dimension: a number, a name, or a product of them (`B*S`, `4*B`).
  Dim parseDim() {
    Dim d(int64_t(1));
    for (;;) {
      Token t = Cur;
      if (t.kind == Tok::Number) {
        consume();
        d = d * Dim(parseInt(t, "dimension"));
      } else if (t.kind == Tok::Ident) {
        consume();
        if (!isDimName(t.text))
          error(t, llvm::formatv("'{0}' is not a valid dimension name (a letter or '_', then "
                                 "letters, digits and '_')",
                                 shown(t.text))
                       .str());
        d = d * Dim(std::string_view(t.text));
      } else {
        error(t, "expected a dimension (a number or a name such as B), got " + describe(t));
      }
      if (Cur.kind != Tok::Star)
        return d;
      consume();
    }
  }

  /// `[4096, B, B*S]`, checked with checkShape (`what` names it); with
  /// `check` false (reshape's target) and a -1 in it, only its rank.
  Shape parseShape(llvm::StringRef what, bool check = true) {
    Token open = expect(Tok::LBracket, "'['");
    std::vector<Dim> dims;
    if (Cur.kind != Tok::RBracket)
      for (;;) {
        Token at = Cur;
        dims.push_back(parseDim());
        if (dims.size() > 64)
          error(at, "too many entries in the dimension list");
        if (Cur.kind == Tok::Comma) {
          consume();
          continue;
        }
        break;
      }
    expect(Tok::RBracket, "',' or ']'");
    Shape s{std::span<const Dim>(dims)};
    bool inferred = llvm::any_of(dims, [](const Dim &d) { return d.expr() == DimExpr{-1, {}}; });
    if (!check && inferred && dims.size() <= kMaxRank) // Graph::add resolves the -1
      return s;
    try {
      checkShape(s, what);
    } catch (const GraphError &e) {
      error(open, e.what());
    }
    return s;
  }

  std::pair<DType, Shape> parseType() {
    Token t = expect(Tok::Ident, "a dtype (f32, f16, bf16, i32, bool)");
    std::optional<DType> d = parseDType(t.text);
    if (!d)
      error(t, llvm::formatv("unknown dtype '{0}' (expected f32, f16, bf16, i32 or bool)",
                             shown(t.text))
                   .str());
    return {*d, parseShape("type")};
  }

  Graph parseGraph(Token &nameTok) {
    if (!isIdent("graph"))
      error(Cur, "expected 'graph', got " + describe(Cur));
    consume();
    nameTok = expect(Tok::Ident, "a graph name");
    std::optional<Graph> maybe;
    try {
      maybe.emplace(nameTok.text.str());
    } catch (const GraphError &e) {
      error(nameTok, e.what());
    }
    Graph &g = *maybe;
    DerivativeAt.clear();
    llvm::StringMap<unsigned> defLine;
    expect(Tok::LParen, "'('");
    if (Cur.kind != Tok::RParen) {
      for (;;) {
        Token v = expect(Tok::Value, "an argument (%name: type)");
        expect(Tok::Colon, "':' after the argument name");
        auto [dtype, shape] = parseType();
        if (defLine.count(v.text))
          error(v, llvm::formatv("%{0} is already defined (line {1})", v.text, defLine[v.text])
                       .str());
        try {
          g.input(v.text, dtype, shape);
        } catch (const GraphError &e) {
          error(v, e.what()); // the node limit
        }
        defLine[v.text] = v.line;
        if (Cur.kind == Tok::Comma) {
          consume();
          continue;
        }
        break;
      }
    }
    expect(Tok::RParen, "',' or ')'");
    expect(Tok::LBrace, "'{'");
    while (!isIdent("return")) {
      if (Cur.kind == Tok::RBrace || Cur.kind == Tok::Eof)
        error(Cur, llvm::formatv("graph '{0}' has no return", g.name()).str());
      parseStatement(g, defLine);
    }
    consume(); // return
    for (;;) {
      Token v = Cur;
      if (v.kind != Tok::Value)
        error(v, "expected a value (%name) to return, got " + describe(v));
      consume();
      std::optional<ValueId> id = g.lookup(v.text);
      if (!id)
        error(v, llvm::formatv("%{0} is not defined", v.text).str());
      if (Cur.kind == Tok::Arrow) { // %value -> %input: an update in place
        consume();
        Token in = expect(Tok::Value, "the argument it updates (%name) after '->'");
        std::optional<ValueId> target = g.lookup(in.text);
        if (!target)
          error(in, llvm::formatv("%{0} is not defined", in.text).str());
        try {
          g.update(*target, *id);
        } catch (const GraphError &e) {
          error(in, e.what());
        }
      } else {
        g.output(*id);
      }
      if (Cur.kind == Tok::Comma) {
        consume();
        continue;
      }
      break;
    }
    expect(Tok::RBrace, "'}' after the return");
    checkExpansion(g);
    return std::move(*maybe);
  }

  /// A grad or vjp whose expansion would pass a limit (a backward sweep
  /// about doubles a chain's depth) is an error at its statement, as the
  /// limits are for what the user writes. With named dimensions unbound the
  /// expansion waits for the sizes, and reports the derivative by name.
  void checkExpansion(const Graph &g) {
    if (DerivativeAt.empty() || hasUnboundDims(g))
      return;
    try {
      expandAutodiff(g);
    } catch (const ExpansionError &e) {
      auto it = DerivativeAt.find(e.derivative());
      if (it != DerivativeAt.end())
        error(it->second, e.what());
      throw;
    }
  }

  Operand parseOperand() {
    Token t = Cur;
    if (t.kind == Tok::Value) {
      consume();
      return lookupOperand(t);
    }
    if (t.kind == Tok::Number || (t.kind == Tok::Ident && (t.text == "true" || t.text == "false" ||
                                                           t.text == "nan" || t.text == "inf"))) {
      consume();
      Literal lit{0, false, t};
      if (t.text == "true" || t.text == "false") {
        lit.value = t.text == "true";
        lit.isBool = true;
      } else if (t.text == "nan") {
        lit.value = NAN;
      } else {
        std::string s = t.text.str();
        errno = 0;
        char *end = nullptr;
        double v = std::strtod(s.c_str(), &end);
        if (end != s.c_str() + s.size())
          error(t, "malformed number " + shown(t.text));
        if (errno == ERANGE && std::isinf(v))
          error(t, llvm::formatv("literal {0} is out of range", shown(t.text)).str());
        // As overflow is an error, so is a nonzero literal that f32 (the
        // widest float, which f16/bf16 literals keep) would hold as 0.
        if (v != 0 && static_cast<float>(v) == 0)
          error(t, llvm::formatv("literal {0} underflows f32: it is not 0 but rounds to 0 (the "
                                 "smallest nonzero f32 is about 1.4e-45); write 0 if 0 is meant",
                                 shown(t.text))
                       .str());
        lit.value = v;
      }
      return lit;
    }
    error(t, "expected an operand (%name or a number), got " + describe(t));
  }

  ValueId lookupOperand(const Token &t) {
    std::optional<ValueId> id = CurGraph->lookup(t.text);
    if (!id)
      error(t, llvm::formatv("%{0} is not defined", t.text).str());
    return *id;
  }

  void parseStatement(Graph &g, llvm::StringMap<unsigned> &defLine) {
    CurGraph = &g;
    Token nameTok = expect(Tok::Value, "a statement (%name = op ...) or 'return'");
    if (defLine.count(nameTok.text))
      error(nameTok, llvm::formatv("%{0} is already defined (line {1})", nameTok.text,
                                   defLine[nameTok.text])
                         .str());
    expect(Tok::Equals, "'=' after %" + shown(nameTok.text));
    Token opTok = expect(Tok::Ident, "an op name");
    std::optional<OpKind> op = parseOpName(opTok.text);
    if (!op)
      error(opTok, unknownOpMessage(opTok.text));
    llvm::SmallVector<Operand, 3> operands;
    // iota has no operands; concat takes any number of them.
    size_t maxOperands = *op == OpKind::Concat ? kMaxConcatOperands : 3;
    bool noOperands = opClass(*op) == OpClass::Iota;
    if (!noOperands)
      operands.push_back(parseOperand());
    while (!noOperands && Cur.kind == Tok::Comma) {
      consume();
      Token at = Cur;
      operands.push_back(parseOperand());
      if (operands.size() > maxOperands)
        error(at, llvm::formatv("{0}: too many operands", opName(*op)).str());
    }
    if (*op == OpKind::Iota && (Cur.kind == Tok::Value || Cur.kind == Tok::Number))
      error(Cur, "iota: takes no operands, only shape=[...] axis=A dtype=D");
    if (*op == OpKind::Full && (Cur.kind == Tok::Value || Cur.kind == Tok::Number))
      error(Cur, "full: takes no operands, only shape=[...] value=V dtype=D");
    // `add %x %h`: an operand without the comma before it (a value not
    // followed by '=' does not start the next statement).
    if (Cur.kind == Tok::Number || (Cur.kind == Tok::Value && peek().kind != Tok::Equals))
      error(Cur, llvm::formatv("expected ',' before the next operand of {0}, got {1}",
                               opName(*op), describe(Cur))
                     .str());

    NodeSpec spec;
    spec.op = *op;
    spec.name = nameTok.text.str();
    if (spec.op == OpKind::Iota)
      spec.dtype = DType::I32; // the default of dtype=
    else if (spec.op == OpKind::Full || spec.op == OpKind::Rand || spec.op == OpKind::Randn)
      spec.dtype = DType::F32;
    llvm::StringMap<bool> seenAttr;
    while (Cur.kind == Tok::Ident && Cur.text != "return") {
      Token key = Cur;
      consume();
      if (seenAttr.count(key.text))
        error(key, llvm::formatv("attribute '{0}' is given twice", shown(key.text)).str());
      seenAttr[key.text] = true;
      expect(Tok::Equals, "'=' after the attribute name");
      parseAttribute(spec, key);
    }
    checkRequiredAttributes(spec, opTok, seenAttr);
    Token typeTok = Cur;
    std::optional<std::pair<DType, Shape>> declared;
    if (Cur.kind == Tok::Colon) {
      consume();
      typeTok = Cur;
      declared = parseType();
    }
    resolveOperands(spec, operands, declared ? std::optional<DType>(declared->first) : std::nullopt);

    ValueId id;
    try {
      id = g.add(spec);
    } catch (const GraphError &e) {
      error(opTok, e.what());
    }
    defLine[nameTok.text] = nameTok.line;
    if (opClass(spec.op) == OpClass::Derivative)
      DerivativeAt[id] = opTok;
    if (declared) {
      auto [dtype, shape] = *declared;
      const Node &n = g.node(id);
      if (dtype != n.dtype || shape != n.shape)
        error(typeTok, llvm::formatv("declared type {0} does not match the inferred type {1}",
                                     typeText(dtype, shape), typeText(n.dtype, n.shape))
                           .str());
    }
  }

  void parseAttribute(NodeSpec &spec, const Token &key) {
    OpClass cls = opClass(spec.op);
    auto unknown = [&]() {
      const char *expected = "none";
      switch (cls) {
      case OpClass::Reduce: expected = isArgReduction(spec.op) ? "axis, keepdim" : "axes, keepdim"; break;
      case OpClass::View:
        expected = spec.op == OpKind::Permute ? "perm"
                   : spec.op == OpKind::Flip  ? "axes"
                   : spec.op == OpKind::Slice ? "axis, start, end, step"
                   : spec.op == OpKind::Pad   ? "before, after, value"
                                              : "shape";
        break;
      case OpClass::Cast: expected = "to"; break;
      case OpClass::Iota:
        expected = spec.op == OpKind::Full ? "shape, value, dtype" : "shape, axis, dtype";
        break;
      case OpClass::Concat:
      case OpClass::Gather: expected = "axis"; break;
      case OpClass::Scan: expected = "axis, reverse"; break;
      case OpClass::Random: expected = spec.op == OpKind::Dropout ? "p" : "shape, dtype"; break;
      case OpClass::Input:
      case OpClass::Constant:
      case OpClass::Unary:
      case OpClass::Binary:
      case OpClass::Select:
      case OpClass::Matmul:
      case OpClass::Derivative:
        break;
      }
      error(key, llvm::formatv("unknown attribute '{0}' for {1} (expected: {2})", shown(key.text),
                               opName(spec.op), expected)
                     .str());
    };
    if (key.text == "axis" && isArgReduction(spec.op)) {
      spec.axes = DimVector{parseInt(expect(Tok::Number, "an integer axis"), "axis")};
    } else if (key.text == "axes" && cls == OpClass::Reduce && !isArgReduction(spec.op)) {
      spec.axes = parseIntList("axis");
    } else if (key.text == "keepdim" && cls == OpClass::Reduce) {
      spec.keepdim = parseBool();
    } else if (key.text == "reverse" && cls == OpClass::Scan) {
      spec.reverse = parseBool();
    } else if (key.text == "axes" && spec.op == OpKind::Flip) {
      spec.axes = parseIntList("axis");
    } else if (key.text == "perm" && spec.op == OpKind::Permute) {
      spec.perm = parseIntList("axis");
    } else if (key.text == "shape" &&
               (spec.op == OpKind::Reshape || spec.op == OpKind::Broadcast)) {
      // reshape's -1 (the inferred dimension) is resolved and checked by Graph::add
      spec.shape = parseShape(opName(spec.op), /*check=*/spec.op != OpKind::Reshape);
    } else if (key.text == "axis" && (spec.op == OpKind::Slice || cls == OpClass::Concat ||
                                      spec.op == OpKind::Iota || cls == OpClass::Gather ||
                                      cls == OpClass::Scan)) {
      spec.axis = parseInt(expect(Tok::Number, "an integer axis"), "axis");
    } else if ((key.text == "start" || key.text == "end" || key.text == "step") &&
               spec.op == OpKind::Slice) {
      int64_t v = parseInt(expect(Tok::Number, "an integer " + key.text.str()), key.text);
      (key.text == "start" ? spec.start : key.text == "end" ? spec.end : spec.step) = v;
    } else if ((key.text == "before" || key.text == "after") && spec.op == OpKind::Pad) {
      (key.text == "before" ? spec.before : spec.after) = parseIntList("count");
    } else if (key.text == "value" && (spec.op == OpKind::Pad || spec.op == OpKind::Full)) {
      Token at = Cur;
      Operand v = parseOperand();
      auto *lit = std::get_if<Literal>(&v);
      if (!lit)
        error(at, llvm::formatv("{0}: value= is a number literal, not a value", opName(spec.op))
                      .str());
      spec.value = lit->value;
    } else if (key.text == "p" && spec.op == OpKind::Dropout) {
      Token at = Cur;
      Operand v = parseOperand();
      auto *lit = std::get_if<Literal>(&v);
      if (!lit || lit->isBool)
        error(at, "dropout: p= is a number literal, not a value");
      spec.value = lit->value;
    } else if ((key.text == "shape" || key.text == "dtype") &&
               (spec.op == OpKind::Rand || spec.op == OpKind::Randn)) {
      if (key.text == "shape") {
        spec.shape = parseShape(opName(spec.op));
      } else {
        Token v = expect(Tok::Ident, "a dtype");
        std::optional<DType> d = parseDType(v.text);
        if (!d)
          error(v, llvm::formatv("unknown dtype '{0}' (expected f32, f16 or bf16)", shown(v.text))
                       .str());
        spec.dtype = *d;
      }
    } else if (key.text == "shape" && cls == OpClass::Iota) {
      spec.shape = parseShape(opName(spec.op));
    } else if (key.text == "dtype" && cls == OpClass::Iota) {
      Token v = expect(Tok::Ident, "a dtype");
      std::optional<DType> d = parseDType(v.text);
      if (!d)
        error(v, llvm::formatv("unknown dtype '{0}' (expected f32, f16, bf16{1})",
                               shown(v.text),
                               spec.op == OpKind::Full ? ", i32 or bool" : " or i32")
                     .str());
      spec.dtype = *d;
    } else if (key.text == "to" && cls == OpClass::Cast) {
      Token v = expect(Tok::Ident, "a dtype");
      std::optional<DType> d = parseDType(v.text);
      if (!d)
        error(v, llvm::formatv("unknown dtype '{0}' (expected f32, f16, bf16, i32 or bool)",
                               shown(v.text))
                     .str());
      spec.dtype = *d;
    } else {
      unknown();
    }
  }

  void checkRequiredAttributes(const NodeSpec &spec, const Token &opTok,
                               const llvm::StringMap<bool> &seen) {
    const char *need = nullptr;
    auto needAll = [&](std::initializer_list<const char *> keys) {
      for (const char *k : keys)
        if (!seen.count(k) && !need)
          need = k;
    };
    if (spec.op == OpKind::Slice)
      needAll({"axis", "start", "end"});
    else if (spec.op == OpKind::Pad)
      needAll({"before", "after"});
    else if (spec.op == OpKind::Concat || opClass(spec.op) == OpClass::Gather ||
             opClass(spec.op) == OpClass::Scan ||
             isArgReduction(spec.op))
      needAll({"axis"});
    else if (spec.op == OpKind::Iota)
      needAll({"shape", "axis"});
    else if (spec.op == OpKind::Full)
      needAll({"shape", "value"});
    else if (spec.op == OpKind::Flip)
      need = "axes";
    else if (spec.op == OpKind::Rand || spec.op == OpKind::Randn)
      need = "shape";
    else if (spec.op == OpKind::Dropout)
      need = "p";
    else if (spec.op == OpKind::Permute)
      need = "perm";
    else if (spec.op == OpKind::Reshape || spec.op == OpKind::Broadcast)
      need = "shape";
    else if (spec.op == OpKind::Cast)
      need = "to";
    if (need && !seen.count(need))
      error(opTok, llvm::formatv("{0} needs the attribute {1}=...", opName(spec.op), need).str());
  }

  /// Turns literals into constants of the dtype their tensor operand has. A
  /// view of a literal (`broadcast 0 shape=[4] : f32[4]`, as the printer
  /// writes a gradient of zeros) takes the statement's declared dtype.
  void resolveOperands(NodeSpec &spec, llvm::SmallVectorImpl<Operand> &operands,
                       std::optional<DType> declared) {
    OpClass cls = opClass(spec.op);
    Graph &g = *CurGraph;
    std::optional<DType> litType;
    if (cls == OpClass::View)
      litType = declared;
    if (cls == OpClass::Binary) {
      for (Operand &o : operands)
        if (auto *v = std::get_if<ValueId>(&o))
          litType = g.node(*v).dtype;
    } else if (cls == OpClass::Select && operands.size() == 3) {
      for (unsigned i = 1; i < 3; ++i)
        if (auto *v = std::get_if<ValueId>(&operands[i]))
          litType = g.node(*v).dtype;
    }
    for (unsigned i = 0; i < operands.size(); ++i) {
      auto *lit = std::get_if<Literal>(&operands[i]);
      if (!lit) {
        spec.operands.push_back(std::get<ValueId>(operands[i]));
        continue;
      }
      std::optional<DType> t = litType;
      if (cls == OpClass::Select && i == 0)
        t = DType::Bool;
      // a random op's seed and offset: i32 literals (`rand 42, 0 shape=[8]`)
      bool seedOrOffset = cls == OpClass::Random && i + 2 >= operands.size();
      if (seedOrOffset)
        t = DType::I32;
      if (cls == OpClass::View && !t)
        error(lit->tok, llvm::formatv("{0}: a literal operand needs the statement's type (e.g. "
                                      "`: f32[4]`) to take its dtype from",
                                      opName(spec.op))
                            .str());
      if (cls != OpClass::Binary && cls != OpClass::Select && cls != OpClass::View &&
          !seedOrOffset)
        error(lit->tok, llvm::formatv("{0}: operand {1} must be a value (%name), not a literal",
                                      opName(spec.op), i)
                            .str());
      if (!t)
        error(lit->tok, llvm::formatv("{0}: a literal needs a tensor operand beside it to take "
                                      "its dtype from",
                                      opName(spec.op))
                            .str());
      if (lit->isBool && *t != DType::Bool)
        error(lit->tok, llvm::formatv("literal {0} is a bool but the operand is {1}",
                                      lit->tok.text, dtypeName(*t))
                            .str());
      try {
        spec.operands.push_back(g.constant(lit->value, *t));
      } catch (const GraphError &e) {
        error(lit->tok, e.what());
      }
    }
  }

  Lexer Lex;
  llvm::StringRef File;
  Token Cur;
  Graph *CurGraph = nullptr;
  std::map<ValueId, Token> DerivativeAt; ///< the op of each grad or vjp statement
};

} // namespace

std::vector<Graph> parseGraphs(std::string_view text, std::string_view file) {
  Parser p(text, file);
  return p.parseFile();
}

std::vector<Graph> parseFile(std::string_view path) {
  // A device or a pipe (/dev/zero, a FIFO) has no size to bound the read by.
  llvm::sys::fs::file_status st;
  if (!llvm::sys::fs::status(llvm::Twine(llvm::StringRef(path)), st) &&
      !llvm::sys::fs::is_regular_file(st))
    throw ParseError(std::string(path), 0, 0,
                     "not a regular file (a device, pipe or folder); graphs are read from regular "
                     "files only");
  auto buf = llvm::MemoryBuffer::getFile(llvm::StringRef(path), /*IsText=*/true);
  if (!buf)
    throw ParseError(std::string(path), 0, 0, "cannot read the file: " + buf.getError().message());
  return parseGraphs((*buf)->getBuffer(), path);
}

} // namespace minijit
