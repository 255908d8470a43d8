//===- tools/DataFlags.cpp - what --input, --save and --dim ask for -------===//
#include "tools/DataFlags.h"

#include "ir/Bind.h"
#include "ir/Npy.h"
#include "tools/Harness.h"

#include "llvm/ADT/StringExtras.h"
#include "llvm/Support/FileSystem.h"
#include "llvm/Support/FormatVariadic.h"
#include "llvm/Support/raw_ostream.h"

#include <map>

namespace minijit {

/// Seeded random inputs for `g`, with those that --input names read from
/// their files. The files are read (and checked against the input's type)
/// first, and random tensors made only for the inputs left, so a bad file is
/// reported before anything large is allocated. Throws UsageError for a
/// malformed flag, an unknown name, a name given twice or a file that does
/// not hold the input's type.
std::vector<HostTensor> inputsFor(const Graph &g, uint64_t seed, const DataFlags &d) try {
  std::vector<HostTensor> fromFiles(g.inputs().size());
  std::vector<bool> given(g.inputs().size(), false);
  for (const std::string &spec : d.inputs) {
    auto [name, path] = llvm::StringRef(spec).split('=');
    name.consume_front("%");
    if (name.empty() || path.empty())
      throw GraphError("--input " + spec + ": expected NAME=FILE.npy");
    std::optional<ValueId> id = g.lookup(name);
    auto it = id ? llvm::find(g.inputs(), *id) : g.inputs().end();
    if (it == g.inputs().end()) {
      std::string names;
      for (ValueId in : g.inputs())
        names += (names.empty() ? "%" : ", %") + g.node(in).name;
      throw GraphError(llvm::formatv("--input {0}: graph '{1}' has no input %{2} (its inputs: {3})",
                                     spec, g.name(), name, names)
                           .str());
    }
    const Node &n = g.node(*id);
    size_t k = it - g.inputs().begin();
    if (given[k])
      throw GraphError("--input " + spec + ": input %" + n.name +
                       " is given twice; give each input one file");
    given[k] = true;
    fromFiles[k] = readNpy(path, "input %" + n.name, std::pair(n.dtype, n.shape));
  }
  std::vector<HostTensor> ins = randomInputs(g, seed, &given);
  for (size_t k = 0; k < ins.size(); ++k)
    if (given[k])
      ins[k] = std::move(fromFiles[k]);
  return ins;
} catch (const UsageError &) {
  throw;
} catch (const GraphError &e) {
  throw UsageError(e.what());
}

/// `g` with its named dimensions bound: from --dim and, where `d` is given
/// (the commands that take inputs), from the shapes of the --input files.
/// A graph without names is returned as it is. Throws UsageError for a
/// malformed --dim, a dimension nothing gives a size, or sizes that disagree.
Graph bindForCommand(const Graph &g, const std::vector<std::string> &dimFlags,
                     const DataFlags *d) try {
  DimBindings sizes;
  for (const std::string &flag : dimFlags)
    if (std::string error = parseDimBinding(flag, sizes); !error.empty())
      throw UsageError(error);
  if (sizes.size() < dimFlags.size())
    throw UsageError("--dim: a dimension is given a size twice (" +
                     llvm::join(dimFlags, ", ") + "); give each name one --dim");
  if (!hasUnboundDims(g))
    return g;
  std::map<std::string, std::string> from;
  for (const auto &[name, size] : sizes)
    from[name] = "--dim " + name + "=" + std::to_string(size);
  for (const std::string &spec : d ? d->inputs : std::vector<std::string>{}) {
    auto [name, path] = llvm::StringRef(spec).split('=');
    name.consume_front("%");
    std::optional<ValueId> id = g.lookup(name);
    if (!id || g.node(*id).op != OpKind::Input || path.empty())
      continue; // inputsFor reports it
    const Node &n = g.node(*id);
    HostTensor t = readNpy(path, "input %" + n.name);
    matchShape(n.shape, t.shape(), "input %" + n.name + " (" + path.str() + ")", sizes, from);
  }
  return bindDims(g, sizes);
} catch (const UsageError &) {
  throw;
} catch (const GraphError &e) {
  throw UsageError(e.what());
}

/// Writes each output of `g` as DIR/NAME.npy (DIR/GRAPH/NAME.npy when the
/// file holds several graphs) and says where.
void saveOutputs(const Graph &g, llvm::ArrayRef<HostTensor> outs, const DataFlags &d,
                 bool severalGraphs) {
  if (d.saveDir.empty())
    return;
  std::string dir = severalGraphs ? d.saveDir + "/" + g.name() : d.saveDir;
  if (std::error_code ec = llvm::sys::fs::create_directories(dir))
    throw GraphError(llvm::formatv("--save {0}: cannot create the folder: {1}", dir, ec.message())
                         .str());
  for (size_t i = 0; i < outs.size(); ++i)
    writeNpy(dir + "/" + g.node(g.outputs()[i]).name + ".npy", outs[i]);
  llvm::outs() << llvm::formatv("  saved {0} output{1} to {2}/\n", outs.size(),
                                outs.size() == 1 ? "" : "s", dir);
}

/// Throws UsageError for a --dim NAME that no graph of the file has (`names`):
/// a size that would silently go unused is more likely a typo. (A name of
/// another graph than --graph picks is allowed: one command line may serve
/// every graph of a file.)
void checkDimFlagsUsed(const std::set<std::string> &names,
                       const std::vector<std::string> &dimFlags) {
  for (const std::string &flag : dimFlags) {
    std::string name = llvm::StringRef(flag).split('=').first.str();
    if (!names.count(name))
      throw UsageError(llvm::formatv("--dim {0}: no graph has a dimension named {1} (named "
                                     "dimensions: {2})",
                                     flag, name,
                                     names.empty() ? std::string("none")
                                                   : llvm::join(names, ", "))
                           .str());
  }
}

/// Throws UsageError when --save would write two outputs of one graph to one
/// file (a graph that returns a value twice, or two values of one name).
void checkSaveNames(const std::vector<Graph> &gs, const DataFlags &d) {
  if (d.saveDir.empty())
    return;
  for (const Graph &g : gs) {
    std::map<std::string, size_t> first;
    for (size_t i = 0; i < g.outputs().size(); ++i) {
      const std::string &name = g.node(g.outputs()[i]).name;
      auto [it, fresh] = first.try_emplace(name, i);
      if (!fresh)
        throw UsageError(llvm::formatv("--save {0}: graph '{1}' returns %{2} as output {3} and "
                                       "output {4}; --save writes each output as NAME.npy, so "
                                       "the names must differ",
                                       d.saveDir, g.name(), name, it->second, i)
                             .str());
    }
  }
}

} // namespace minijit
