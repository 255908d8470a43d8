//===- ir/LexerInternal.h - the text format's tokens -------------*- C++ -*-===//
// The lexer of the text format (docs/FORMAT.md), used by ir/Parser.cpp alone.
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/ADT/StringRef.h"

#include <string>

namespace minijit {
namespace detail {

enum class Tok {
  Eof, Ident, Value, Number, LParen, RParen, LBrace, RBrace, LBracket, RBracket, Comma, Colon,
  Equals, Arrow, Star
};

struct Token {
  Tok kind = Tok::Eof;
  llvm::StringRef text;
  unsigned line = 1, col = 1;
};

inline bool isIdentStart(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
inline bool isDigit(char c) { return c >= '0' && c <= '9'; }
inline bool isNameChar(char c) { return isIdentStart(c) || isDigit(c) || c == '.'; }

/// Shows a token or character safely in a message: printable ASCII as is,
/// other bytes as \xNN, long text cut.
std::string shown(llvm::StringRef s);

/// Splits the text into tokens; `#` starts a comment to the end of the line.
class Lexer {
public:
  Lexer(llvm::StringRef text, llvm::StringRef file) : Text(text), File(file) {}

  /// The next token (Tok::Eof at the end). Throws ParseError, located, for a
  /// character no token starts with.
  Token next();

private:
  void advance(size_t n);
  void skipSpaceAndComments();

  llvm::StringRef Text, File;
  size_t Pos = 0;
  unsigned Line = 1, Col = 1;
};

} // namespace detail
} // namespace minijit
