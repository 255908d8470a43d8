//===- ir/Version.cpp - minijit's version ---------------------------------===//
#include "ir/Version.h"

#ifndef MINIJIT_VERSION
#error "MINIJIT_VERSION is defined by CMake from project(VERSION)"
#endif

namespace minijit {

const char *minijitVersion() { return MINIJIT_VERSION; }

} // namespace minijit
