//===- ir/Expected.h - a value, or why there is none -----*- C++ -*-===//
// What a function that may refuse returns: its value, or a Refusal carrying
// the message a user would see. For refusals the caller acts on (a schedule
// parameter a kernel cannot take, override text that does not parse: the
// search drops the candidate, the CLI reports bad usage), where an exception
// would be control flow.
//===----------------------------------------------------------------------===//
#pragma once

#include <cassert>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

namespace minijit {

/// Why a value could not be made. `message` is complete and lower-case
/// ("schedule override: tpr must be a power of two up to 1024").
struct Refusal {
  std::string message;
};

/// A T, or the Refusal that stands in its place.
template <typename T> class [[nodiscard]] Expected {
public:
  /// From anything a T converts from (`return std::nullopt;` for an
  /// Expected<std::optional<X>>).
  template <typename U = T,
            typename = std::enable_if_t<std::is_convertible_v<U &&, T> &&
                                        !std::is_same_v<std::decay_t<U>, Refusal> &&
                                        !std::is_same_v<std::decay_t<U>, Expected>>>
  Expected(U &&value) : V(std::in_place_index<0>, std::forward<U>(value)) {}
  Expected(Refusal why) : V(std::in_place_index<1>, std::move(why)) {}

  /// Whether it holds a value.
  explicit operator bool() const { return V.index() == 0; }
  T &operator*() {
    assert(*this && "an Expected that holds a refusal has no value");
    return std::get<0>(V);
  }
  const T &operator*() const {
    assert(*this && "an Expected that holds a refusal has no value");
    return std::get<0>(V);
  }
  T *operator->() { return &**this; }
  const T *operator->() const { return &**this; }
  /// The refusal's message; only when it holds no value.
  const std::string &error() const {
    assert(!*this && "an Expected that holds a value has no refusal");
    return std::get<1>(V).message;
  }
  const Refusal &refusal() const {
    assert(!*this && "an Expected that holds a value has no refusal");
    return std::get<1>(V);
  }

private:
  std::variant<T, Refusal> V;
};

} // namespace minijit
