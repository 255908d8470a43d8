//===- ir/Error.h - the errors minijit reports to its users ----*- C++ -*-===//
// Every user mistake (a bad graph, text that does not parse, a kernel NVRTC
// rejects, a driver failure) is thrown as one of these. Bugs are asserts.
//===----------------------------------------------------------------------===//
#pragma once

#include <stdexcept>
#include <string>

namespace minijit {

/// Base of every error minijit throws for a user's mistake or the environment.
/// Messages start lower-case and carry the numbers involved.
class Error : public std::runtime_error {
public:
  using std::runtime_error::runtime_error;
};

/// A graph that is not valid: shapes that do not broadcast, an axis out of
/// range, mixed dtypes, an input of the wrong shape at run time.
class GraphError : public Error {
public:
  using Error::Error;
};

/// Text that does not parse or verify. what() is "FILE:LINE:COL: error: MSG".
class ParseError : public Error {
public:
  ParseError(std::string file, unsigned line, unsigned col, std::string msg);
  const std::string &file() const { return File; }
  unsigned line() const { return Line; }
  unsigned column() const { return Col; }
  /// The message without the location prefix.
  const std::string &message() const { return Msg; }

private:
  std::string File;
  unsigned Line, Col;
  std::string Msg;
};

/// NVRTC rejected a kernel, or the compiler cannot handle a graph (an op with
/// no code generator). Carries the log and the numbered source when there is one.
class CompileError : public Error {
public:
  using Error::Error;
};

/// The CUDA driver failed or is missing. Carries the call and the driver's words.
class CudaError : public Error {
public:
  using Error::Error;
};

/// The host cannot hold what was asked: a tensor larger than its memory or
/// the address-space limit (ulimit -v), or an allocation that failed.
class ResourceError : public Error {
public:
  using Error::Error;
};

} // namespace minijit
