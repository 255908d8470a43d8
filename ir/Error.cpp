//===- ir/Error.cpp - the errors minijit reports to its users -------------===//
#include "ir/Error.h"

namespace minijit {

namespace {
std::string located(const std::string &file, unsigned line, unsigned col, const std::string &msg) {
  if (line == 0) // a problem with the file itself (it cannot be read, say)
    return file + ": error: " + msg;
  return file + ":" + std::to_string(line) + ":" + std::to_string(col) + ": error: " + msg;
}
} // namespace

ParseError::ParseError(std::string file, unsigned line, unsigned col, std::string msg)
    : Error(located(file, line, col, msg)),
      File(std::move(file)), Line(line), Col(col), Msg(std::move(msg)) {}

} // namespace minijit
