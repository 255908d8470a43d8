//===- tools/DataFlags.h - what --input, --save and --dim ask for -*- C++ -*-===//
// The minijit tool's flags that bring data in and out: inputs read from .npy
// files, outputs saved as .npy, and named sizes bound from --dim and from the
// shapes of the files. Each mistake is a UsageError (exit status 2).
//===----------------------------------------------------------------------===//
#pragma once

#include "ir/Error.h"
#include "ir/Graph.h"
#include "ir/HostTensor.h"

#include "llvm/ADT/ArrayRef.h"

#include <cstdint>
#include <set>
#include <string>
#include <vector>

namespace minijit {

/// A flag whose value is wrong (a --input file that does not hold its
/// input): exit status 2, like a file that does not parse.
struct UsageError : GraphError {
  using GraphError::GraphError;
};

/// What --input and --save ask for.
struct DataFlags {
  std::vector<std::string> inputs; ///< NAME=FILE.npy
  std::string saveDir;
};

/// Seeded random inputs for `g`, with those that --input names read from
/// their files. The files are read (and checked against the input's type)
/// first, and random tensors made only for the inputs left, so a bad file is
/// reported before anything large is allocated. Throws UsageError for a
/// malformed flag, an unknown name, a name given twice or a file that does
/// not hold the input's type.
std::vector<HostTensor> inputsFor(const Graph &g, uint64_t seed, const DataFlags &d);

/// `g` with its named dimensions bound: from --dim and, where `d` is given
/// (the commands that take inputs), from the shapes of the --input files.
/// A graph without names is returned as it is. Throws UsageError for a
/// malformed --dim, a dimension nothing gives a size, or sizes that disagree.
Graph bindForCommand(const Graph &g, const std::vector<std::string> &dimFlags,
                     const DataFlags *d);

/// Writes each output of `g` as DIR/NAME.npy (DIR/GRAPH/NAME.npy when the
/// file holds several graphs) and says where.
void saveOutputs(const Graph &g, llvm::ArrayRef<HostTensor> outs, const DataFlags &d,
                 bool severalGraphs);

/// Throws UsageError for a --dim NAME that no graph of the file has (`names`):
/// a size that would silently go unused is more likely a typo. (A name of
/// another graph than --graph picks is allowed: one command line may serve
/// every graph of a file.)
void checkDimFlagsUsed(const std::set<std::string> &names,
                       const std::vector<std::string> &dimFlags);

/// Throws UsageError when --save would write two outputs of one graph to one
/// file (a graph that returns a value twice, or two values of one name).
void checkSaveNames(const std::vector<Graph> &gs, const DataFlags &d);

} // namespace minijit
