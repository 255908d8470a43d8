//===- compiler/Stage.cpp - the stages whose text can be printed ----------===//
#include "compiler/Stage.h"

#include "llvm/Support/ErrorHandling.h"

namespace minijit {

namespace {

constexpr Stage kStages[] = {Stage::Graph, Stage::Fused,     Stage::Lowered, Stage::Cuda,
                             Stage::Ptx,   Stage::Resources, Stage::Dot};

} // namespace

std::string_view stageName(Stage s) {
  switch (s) {
  case Stage::Graph: return "graph";
  case Stage::Fused: return "fused";
  case Stage::Cuda: return "cuda";
  case Stage::Ptx: return "ptx";
  case Stage::Resources: return "resources";
  case Stage::Dot: return "dot";
  case Stage::Lowered: return "lowered";
  }
  llvm_unreachable("bad stage");
}

std::optional<Stage> parseStage(std::string_view name) {
  for (Stage s : kStages)
    if (stageName(s) == name)
      return s;
  return std::nullopt;
}

std::string stageList() {
  std::string s;
  for (size_t i = 0; i < std::size(kStages); ++i) {
    if (i)
      s += i + 1 == std::size(kStages) ? " or " : ", ";
    s += stageName(kStages[i]);
  }
  return s;
}

Stage producingStage(Stage s) {
  switch (s) {
  case Stage::Graph:
  case Stage::Fused:
  case Stage::Cuda:
  case Stage::Ptx: return s;
  case Stage::Resources: return Stage::Ptx;
  case Stage::Dot:
  case Stage::Lowered: return Stage::Fused;
  }
  llvm_unreachable("bad stage");
}

std::string_view dumpExtension(Stage s) {
  switch (s) {
  case Stage::Graph: return ".mj";
  case Stage::Fused: return ".fused.txt";
  case Stage::Cuda: return ".cu";
  case Stage::Ptx: return ".ptx";
  case Stage::Resources: return ".resources.txt";
  case Stage::Dot: return ".dot";
  case Stage::Lowered: return ".lowered.txt";
  }
  llvm_unreachable("bad stage");
}

} // namespace minijit
