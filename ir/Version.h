//===- ir/Version.h - minijit's version -------------------------*- C++ -*-===//
// The semantic version, set once in the top-level CMakeLists.txt (project
// VERSION). Printed by `minijit --version` and part of every kernel cache key.
//===----------------------------------------------------------------------===//
#pragma once

namespace minijit {

/// "MAJOR.MINOR.PATCH".
const char *minijitVersion();

} // namespace minijit
