//===- runtime/Target.h - the GPU architecture kernels compile for -*- C++ -*-===//
// A typed NVRTC target (compute capability and the architecture-specific "a"
// variant) with the feature queries the schedules and templates ask. Text
// ("sm_90a") is parsed once where it enters (the CLI's --arch, the C API,
// CompileOptions::arch at compile entry) and spelled again only for NVRTC
// and the caches' keys. Header-only, as the runtime's other types the
// compiler uses (it does not link the runtime).
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Expected.h"

#include <string>
#include <string_view>

namespace minijit {

/// A GPU architecture as NVRTC names it: sm_<major><minor>, with "a" for the
/// architecture-specific variant (features that do not carry over to later
/// architectures: Hopper's wgmma and setmaxnreg).
struct Target {
  int ccMajor = 9;           ///< compute capability, major (9 is Hopper)
  int ccMinor = 0;           ///< compute capability, minor
  bool archSpecific = false; ///< the "a" variant (sm_90a)

  /// NVRTC's spelling: "sm_90", "sm_90a", "sm_100".
  std::string name() const;
  /// The number NVRTC lists (nvrtcGetSupportedArchs): 90 for sm_90.
  int number() const { return ccMajor * 10 + ccMinor; }

  /// Tensor cores through mma.sync for f16/bf16, and cp.async (sm_80 on).
  bool hasMmaF16() const { return ccMajor >= 8; }
  /// Warpgroup MMA (wgmma): Hopper (sm_90) only, its kernels compiled for
  /// the architecture-specific sm_90a; later architectures dropped it.
  bool hasWgmma() const { return ccMajor == 9 && ccMinor == 0; }
  /// The tensor memory accelerator (cp.async.bulk.tensor, sm_90 on).
  bool hasTma() const { return ccMajor >= 9; }
  /// Thread-block clusters (__cluster_dims__, distributed shared memory;
  /// sm_90 on).
  bool hasClusters() const { return ccMajor >= 9; }

  /// The same architecture, architecture-specific (sm_90 -> sm_90a).
  Target specific() const { return {ccMajor, ccMinor, true}; }

  bool operator==(const Target &o) const {
    return ccMajor == o.ccMajor && ccMinor == o.ccMinor && archSpecific == o.archSpecific;
  }
  bool operator!=(const Target &o) const { return !(*this == o); }
};

/// Parses NVRTC's spelling, "sm_" then the compute capability's digits
/// (major, then one digit of minor: sm_80, sm_90, sm_100, sm_121) and an
/// optional "a" (from sm_90). Refuses anything else, naming the text and
/// the expected form. Whether NVRTC and minijit can compile for a target
/// is another question (checkTarget, compiler/nvrtc/Nvrtc.h).
Expected<Target> parseTarget(std::string_view text);

inline std::string Target::name() const {
  return "sm_" + std::to_string(number()) + (archSpecific ? "a" : "");
}

inline Expected<Target> parseTarget(std::string_view text) {
  auto refuse = [&](const std::string &why) {
    return Refusal{"'" + std::string(text) + "' is not a GPU target (" + why + ")"};
  };
  std::string_view s = text;
  if (s.substr(0, 3) != "sm_")
    return refuse("expected sm_ and the compute capability, e.g. sm_90 or sm_90a");
  s.remove_prefix(3);
  bool specific = !s.empty() && s.back() == 'a';
  if (specific)
    s.remove_suffix(1);
  if (s.size() < 2 || s.size() > 3)
    return refuse("expected two or three digits after sm_, e.g. sm_90 or sm_100");
  int number = 0;
  for (char c : s) {
    if (c < '0' || c > '9')
      return refuse("expected digits after sm_, e.g. sm_90 or sm_100");
    number = number * 10 + (c - '0');
  }
  if (s.front() == '0')
    return refuse("the compute capability's major version starts with 1 to 9");
  Target t{number / 10, number % 10, specific};
  if (specific && t.ccMajor < 9)
    return refuse("architecture-specific targets (the 'a') begin at sm_90a");
  return t;
}

} // namespace minijit
