//===- compiler/Stage.h - the stages whose text can be printed -*- C++ -*-===//
// One list of the pipeline's printable stages, shared by `minijit compile
// --emit=STAGE`, MINIJIT_DUMP=STAGE,... and MINIJIT_DEBUG, and by
// CompileOptions::stopAfter.
//===----------------------------------------------------------------------===//
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace minijit {

/// In pipeline order: Graph (after simplify), Fused (kernels, their lowering,
/// schedules and names), Cuda (emitted), Ptx (after NVRTC). Resources, Dot
/// and Lowered are views of Ptx, Fused and Fused (the kernels as lowered:
/// loads, ops and stores over index expressions).
enum class Stage { Graph, Fused, Cuda, Ptx, Resources, Dot, Lowered };

/// "graph", "fused", "cuda", "ptx", "resources", "dot", "lowered".
std::string_view stageName(Stage s);
/// The stage a name spells; nullopt for anything else.
std::optional<Stage> parseStage(std::string_view name);
/// "graph, fused, lowered, cuda, ptx, resources or dot", for messages.
std::string stageList();
/// The pipeline stage after which `s`'s text exists (Resources: Ptx, Dot and
/// Lowered: Fused).
Stage producingStage(Stage s);
/// The file name ending of a dump of `s` (".mj", ".fused.txt", ".cu", ...).
std::string_view dumpExtension(Stage s);

} // namespace minijit
