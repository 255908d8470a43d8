//===- tools/CommandLine.h - the minijit tool's flags ----------*- C++ -*-===//
// The subcommands and flags of `minijit` (docs/GUIDE.md), one member each, so
// main reads as parse, check, dispatch. Built once, in main: LLVM's options
// register themselves when constructed.
//===----------------------------------------------------------------------===//
#pragma once

#include "llvm/Support/CommandLine.h"

#include <cstdint>
#include <string>

namespace minijit {

struct CommandLine {
  llvm::cl::SubCommand checkCmd{"check", "parse and verify FILE, print the canonical text"};
  llvm::cl::SubCommand evalCmd{"eval", "run the CPU reference on seeded random inputs"};
  llvm::cl::SubCommand compileCmd{"compile", "compile FILE and print a stage"};
  llvm::cl::SubCommand runCmd{"run", "run FILE on the GPU (seeded random inputs)"};
  llvm::cl::SubCommand compareCmd{"compare", "fused vs unfused on the GPU, side by side"};
  llvm::cl::SubCommand tuneCmd{"tune",
                               "search each kernel's schedule on the GPU and keep the fastest "
                               "in the tuning database"};
  llvm::cl::SubCommand reduceCmd{"reduce",
                                 "shrink FILE's graph while a command keeps succeeding on it"};
  llvm::cl::SubCommand devicesCmd{"devices", "list the GPUs and the properties the schedules use"};
  llvm::cl::opt<std::string> file{llvm::cl::Positional,   llvm::cl::desc("FILE.mj"),
                                  llvm::cl::Required,     llvm::cl::sub(checkCmd),
                                  llvm::cl::sub(evalCmd), llvm::cl::sub(compileCmd),
                                  llvm::cl::sub(runCmd),  llvm::cl::sub(compareCmd),
                                  llvm::cl::sub(tuneCmd), llvm::cl::sub(reduceCmd)};
  llvm::cl::opt<std::string> graph{"graph",
                                   llvm::cl::desc("only the graph with this name"),
                                   llvm::cl::sub(checkCmd),
                                   llvm::cl::sub(evalCmd),
                                   llvm::cl::sub(compileCmd),
                                   llvm::cl::sub(runCmd),
                                   llvm::cl::sub(compareCmd),
                                   llvm::cl::sub(tuneCmd),
                                   llvm::cl::sub(reduceCmd)};
  llvm::cl::opt<std::string> until{
      "until",
      llvm::cl::desc("the shell command that says a candidate still shows the problem "
                     "(exit status "
                     "0); {} stands for the candidate's .mj file, appended when absent"),
      llvm::cl::value_desc("CMD"), llvm::cl::sub(reduceCmd)};
  llvm::cl::opt<std::string> reduceOut{
      "o", llvm::cl::desc("write the reduced graph here (default: stdout)"),
      llvm::cl::value_desc("FILE"), llvm::cl::sub(reduceCmd)};
  llvm::cl::opt<uint64_t> seed{"seed",
                               llvm::cl::desc("seed of the random inputs"),
                               llvm::cl::init(0),
                               llvm::cl::sub(evalCmd),
                               llvm::cl::sub(runCmd),
                               llvm::cl::sub(compareCmd),
                               llvm::cl::sub(tuneCmd)};
  llvm::cl::list<std::string> inputFiles{
      "input",
      llvm::cl::desc("NAME=FILE.npy: read input %NAME from a .npy file "
                     "(repeatable; the others "
                     "stay seeded random)"),
      llvm::cl::sub(evalCmd), llvm::cl::sub(runCmd), llvm::cl::sub(compareCmd)};
  llvm::cl::opt<std::string> saveDir{"save",
                                     llvm::cl::desc("write each output as DIR/NAME.npy"),
                                     llvm::cl::value_desc("DIR"),
                                     llvm::cl::sub(evalCmd),
                                     llvm::cl::sub(runCmd),
                                     llvm::cl::sub(compareCmd)};
  llvm::cl::list<std::string> dimFlags{
      "dim",
      llvm::cl::desc("NAME=SIZE: the size of a named dimension, e.g. --dim B=4096 (once a "
                     "name; eval, run and compare also take sizes from the shapes of "
                     "--input "
                     "files)"),
      llvm::cl::value_desc("NAME=SIZE"),
      llvm::cl::sub(evalCmd),
      llvm::cl::sub(compileCmd),
      llvm::cl::sub(runCmd),
      llvm::cl::sub(compareCmd),
      llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<bool> noFusion{
      "no-fusion", llvm::cl::desc("one kernel per op, as an eager framework runs"),
      llvm::cl::sub(compileCmd), llvm::cl::sub(runCmd), llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<double> budget{
      "budget-s",
      llvm::cl::desc("seconds for the whole search; once spent, the best so far is "
                     "kept (default 60)"),
      llvm::cl::value_desc("N"), llvm::cl::init(60), llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<int> tuneRuns{
      "runs", llvm::cl::desc("timed runs per candidate, their median (default 30)"),
      llvm::cl::value_desc("R"), llvm::cl::init(30), llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<unsigned> maxCandidates{
      "max-candidates", llvm::cl::desc("candidates per kernel, the default included (default 48)"),
      llvm::cl::value_desc("N"), llvm::cl::init(48), llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<bool> dryRun{
      "dry-run",
      llvm::cl::desc("list each kernel's candidates, compiled through NVRTC (no GPU "
                     "needed, nothing timed or stored)"),
      llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<bool> noReassociate{
      "no-reassociate",
      llvm::cl::desc("keep the order of roundings: no sum of a product "
                     "rewritten as a product with a "
                     "summed operand, no scalar factor moved after a product, "
                     "no argmax of a softmax "
                     "(a strictly increasing map) taken of its logits"),
      llvm::cl::sub(compileCmd)};
  llvm::cl::opt<bool> allowTf32{
      "allow-tf32",
      llvm::cl::desc("f32 matmuls may run on tensor cores in TF32 (10 bits of "
                     "fraction per operand), as "
                     "torch.backends.cuda.matmul.allow_tf32; Hopper targets"),
      llvm::cl::sub(compileCmd), llvm::cl::sub(runCmd), llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<bool> tf32x3{
      "tf32x3",
      llvm::cl::desc("large f32 matmuls run as three TF32 products on tensor "
                     "cores where that pays (the default on Hopper targets; "
                     "kept for scripts)"),
      llvm::cl::sub(compileCmd), llvm::cl::sub(runCmd), llvm::cl::sub(tuneCmd),
      llvm::cl::sub(compareCmd)};
  llvm::cl::opt<bool> exactF32{
      "exact-f32",
      llvm::cl::desc("every f32 matmul on the CUDA cores in f32, as cuBLAS's "
                     "SGEMM (by default large ones run as three TF32 products "
                     "on Hopper, no less accurate than SGEMM where measured)"),
      llvm::cl::sub(compileCmd), llvm::cl::sub(runCmd), llvm::cl::sub(tuneCmd),
      llvm::cl::sub(compareCmd)};
  llvm::cl::opt<std::string> schedule{
      "schedule",
      llvm::cl::desc("set schedule parameters by hand, KEY=V,... (the keys of "
                     "MINIJIT_SCHEDULE, "
                     "docs/GUIDE.md), in place of the environment variable"),
      llvm::cl::sub(compileCmd), llvm::cl::sub(runCmd)};
  llvm::cl::opt<std::string> emit{"emit",
                                  llvm::cl::desc("graph|fused|lowered|cuda|ptx|resources|dot"),
                                  llvm::cl::init("fused"), llvm::cl::sub(compileCmd)};
  llvm::cl::opt<std::string> arch{"arch", llvm::cl::desc("NVRTC target, e.g. sm_90"),
                                  llvm::cl::sub(compileCmd)};
  llvm::cl::opt<bool> timing{"time", llvm::cl::desc("print each stage's compile time to stderr"),
                             llvm::cl::sub(compileCmd)};
  llvm::cl::opt<bool> check{"check",
                            llvm::cl::desc("compare with the CPU reference (exit 1 on mismatch)"),
                            llvm::cl::sub(runCmd)};
  llvm::cl::opt<bool> bench{"bench", llvm::cl::desc("time the run (median of 200, after warm-up)"),
                            llvm::cl::sub(runCmd)};
  llvm::cl::opt<bool> profile{"profile", llvm::cl::desc("per-kernel table"), llvm::cl::sub(runCmd)};
  llvm::cl::opt<std::string> trace{"trace", llvm::cl::desc("write a Chrome trace to this file"),
                                   llvm::cl::sub(runCmd)};
  llvm::cl::opt<bool> graphReplay{"graph-replay", llvm::cl::desc("launch through a CUDA graph"),
                                  llvm::cl::sub(runCmd)};
  llvm::cl::opt<int> device{
      "device",
      llvm::cl::desc("the GPU to run on, by its ordinal (minijit devices lists them)"),
      llvm::cl::value_desc("N"),
      llvm::cl::init(0),
      llvm::cl::sub(runCmd),
      llvm::cl::sub(compareCmd),
      llvm::cl::sub(tuneCmd)};
  llvm::cl::opt<bool> bandwidth{
      "bandwidth",
      llvm::cl::desc("measure each GPU's device-to-device copy bandwidth (copies "
                     "1 GiB 23 times)"),
      llvm::cl::sub(devicesCmd)};
  llvm::cl::opt<std::string> profileJson{
      "profile-json",
      llvm::cl::desc("write the per-kernel profile as JSON to this file "
                     "(docs/PROFILE_JSON.md; scripts/plot.py draws it)"),
      llvm::cl::sub(runCmd), llvm::cl::sub(compareCmd)};
};

} // namespace minijit
