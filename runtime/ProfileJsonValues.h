//===- runtime/ProfileJsonValues.h - profile records as JSON values -*- C++ -*-===//
// The pieces of runtime/ProfileJson.h's files as llvm::json values, for a
// tool that writes a file of its own kind (the benchmark suite and its
// sweeps). Not installed: a consumer of minijit writes whole files with
// profileFileJson, whose types are the standard library's.
//===----------------------------------------------------------------------===//
#pragma once

#include "runtime/ProfileJson.h"

#include "llvm/ADT/StringRef.h"
#include "llvm/Support/JSON.h"

#include <string>

namespace minijit {

/// The device object: name, arch, SMs, clock, the copy bandwidth measured in
/// this process and the peaks of peakRates(dev).
llvm::json::Object deviceJson(const DeviceProperties &dev, double copyGBps);

/// One kernel's record (`index` is its place in launch order).
llvm::json::Object kernelJson(const KernelProfile &k, const KernelDescription &d, size_t index);

/// Every kernel of `run`, in launch order.
llvm::json::Array kernelsJson(const ProfiledRun &run);

/// One run: its graph, label, totals and kernels.
llvm::json::Object runJson(const ProfiledRun &run);

/// The header every file of the schema starts with: schema, kind ("profile",
/// "suite", "sweep"), tool, date (utcTimestamp() when empty) and device.
llvm::json::Object fileHeaderJson(llvm::StringRef kind, llvm::StringRef tool,
                                  const DeviceProperties &dev, double copyGBps,
                                  const std::string &date = "");

/// `value` as indented text with a final newline.
std::string formatJson(llvm::json::Value value);

} // namespace minijit
