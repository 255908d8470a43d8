//===- ir/Lexer.cpp - the text format's tokens ----------------------------===//
#include "ir/LexerInternal.h"

#include "ir/Error.h"

#include <cstdio>

namespace minijit {
namespace detail {

std::string shown(llvm::StringRef s) {
  std::string out;
  for (unsigned char c : s.take_front(24)) {
    if (c >= 0x20 && c < 0x7f) {
      out += static_cast<char>(c);
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02X", c);
      out += buf;
    }
  }
  if (s.size() > 24)
    out += "...";
  return out;
}

Token Lexer::next() {
  skipSpaceAndComments();
  Token t;
  t.line = Line;
  t.col = Col;
  if (Pos >= Text.size())
    return t;
  char c = Text[Pos];
  size_t start = Pos;
  auto single = [&](Tok k) {
    advance(1);
    t.kind = k;
    t.text = Text.substr(start, 1);
    return t;
  };
  switch (c) {
  case '(': return single(Tok::LParen);
  case ')': return single(Tok::RParen);
  case '{': return single(Tok::LBrace);
  case '}': return single(Tok::RBrace);
  case '[': return single(Tok::LBracket);
  case ']': return single(Tok::RBracket);
  case ',': return single(Tok::Comma);
  case ':': return single(Tok::Colon);
  case '=': return single(Tok::Equals);
  case '*': return single(Tok::Star);
  default: break;
  }
  if (c == '-' && Pos + 1 < Text.size() && Text[Pos + 1] == '>') {
    advance(2);
    t.kind = Tok::Arrow;
    t.text = Text.substr(start, 2);
    return t;
  }
  if (c == '%') {
    advance(1);
    while (Pos < Text.size() && isNameChar(Text[Pos]))
      advance(1);
    if (Pos == start + 1)
      throw ParseError(File.str(), t.line, t.col, "expected a value name after '%'");
    t.kind = Tok::Value;
    t.text = Text.substr(start + 1, Pos - start - 1);
    return t;
  }
  if (isIdentStart(c)) {
    while (Pos < Text.size() && isNameChar(Text[Pos]))
      advance(1);
    t.kind = Tok::Ident;
    t.text = Text.substr(start, Pos - start);
    return t;
  }
  if (isDigit(c) || c == '-' || c == '+' || c == '.') {
    if (c == '-' || c == '+')
      advance(1);
    if (Text.substr(Pos).startswith("inf") &&
        (Pos + 3 >= Text.size() || !isNameChar(Text[Pos + 3]))) {
      advance(3);
    } else {
      size_t digits = 0;
      while (Pos < Text.size() && isDigit(Text[Pos]))
        advance(1), ++digits;
      if (Pos < Text.size() && Text[Pos] == '.') {
        advance(1);
        while (Pos < Text.size() && isDigit(Text[Pos]))
          advance(1), ++digits;
      }
      if (digits == 0)
        throw ParseError(File.str(), t.line, t.col,
                         "unexpected character '" + shown(Text.substr(start, 1)) + "'");
      if (Pos < Text.size() && (Text[Pos] == 'e' || Text[Pos] == 'E')) {
        size_t save = Pos;
        unsigned saveCol = Col;
        advance(1);
        if (Pos < Text.size() && (Text[Pos] == '+' || Text[Pos] == '-'))
          advance(1);
        size_t expDigits = 0;
        while (Pos < Text.size() && isDigit(Text[Pos]))
          advance(1), ++expDigits;
        if (expDigits == 0) {
          Pos = save;
          Col = saveCol;
        }
      }
    }
    t.kind = Tok::Number;
    t.text = Text.substr(start, Pos - start);
    return t;
  }
  throw ParseError(File.str(), t.line, t.col,
                   "unexpected character '" + shown(Text.substr(start, 1)) + "'");
}

void Lexer::advance(size_t n) {
  for (size_t i = 0; i < n && Pos < Text.size(); ++i, ++Pos) {
    if (Text[Pos] == '\n') {
      ++Line;
      Col = 1;
    } else {
      ++Col;
    }
  }
}

void Lexer::skipSpaceAndComments() {
  while (Pos < Text.size()) {
    char c = Text[Pos];
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r') {
      advance(1);
    } else if (c == '#') {
      while (Pos < Text.size() && Text[Pos] != '\n')
        advance(1);
    } else {
      return;
    }
  }
}

} // namespace detail
} // namespace minijit
