//===- tests/support/Expect.h - helpers for checking error messages -*- C++ -*-===//
#pragma once

#include "ir/Error.h"

#include <gtest/gtest.h>

#include <string>

namespace minijit {

/// The message of the GraphError `fn` throws; fails the test when it throws nothing.
template <typename Fn> std::string graphErrorOf(Fn &&fn) {
  try {
    fn();
  } catch (const GraphError &e) {
    return e.what();
  }
  ADD_FAILURE() << "no GraphError was thrown";
  return "";
}

} // namespace minijit
