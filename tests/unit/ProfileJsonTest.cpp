// The profile as data (runtime/ProfileJson.h, tools/ProfileRecords.h): the
// peaks of the roofline, the kernel records, and that what the writer writes
// is what scripts/plot.py reads (its validator run on the writer's output).
#include "ir/Builder.h"
#include "runtime/ProfileJson.h"
#include "samples/Lecture.h"
#include "tools/ProfileRecords.h"

#include "llvm/Support/FileSystem.h"
#include "llvm/Support/JSON.h"
#include "llvm/Support/Path.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <sys/wait.h>

using namespace minijit;

namespace {

CompiledGraph compileFor(const Graph &g, bool fusion, bool kernels) {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.fusion = fusion;
  opt.compileKernels = kernels;
  return compileGraph(g, opt);
}

/// What profileExecutable would measure on an H200 for `c`, from a model:
/// every kernel moves its bytes at `efficiency` of the 4199 GB/s copy (a
/// little slower for the later kernels), the spread of runs +-2 %.
Profile syntheticProfile(const CompiledGraph &c, double efficiency) {
  const double copy = 4199;
  DeviceProperties dev = DeviceProperties::assumedH200();
  Profile p;
  p.device = "NVIDIA H200";
  p.graph = c.program.graphName;
  p.copyGBps = copy;
  p.runs = 100;
  double start = 0;
  for (size_t k = 0; k < c.program.kernels.size(); ++k) {
    const ProgramKernel &pk = c.program.kernels[k];
    KernelProfile kp;
    kp.name = pk.name;
    kp.bytes = pk.bytesRead + pk.bytesWritten;
    double eff = efficiency - 0.004 * static_cast<double>(k % 4);
    kp.us = kp.bytes / (eff * copy * 1e3);
    kp.minUs = 0.985 * kp.us;
    kp.maxUs = 1.02 * kp.us;
    kp.gbps = kp.bytes / (kp.us * 1e3);
    kp.copyFraction = kp.gbps / copy;
    kp.flops = pk.flops;
    kp.intensity = kp.bytes ? static_cast<double>(kp.flops) / kp.bytes : 0;
    kp.grid = pk.grid;
    kp.block = pk.block;
    kp.blocksPerSM = std::min(dev.maxBlocksPerSM, dev.maxThreadsPerSM / static_cast<int>(pk.block));
    kp.waves = computeWaves(pk.grid, dev.smCount, kp.blocksPerSM);
    kp.resources = pk.resources;
    kp.dynamicShared = pk.dynamicShared;
    kp.startUs = start;
    start += kp.us;
    p.totalUs += kp.us;
    p.kernels.push_back(kp);
  }
  return p;
}

/// The lecture's GeLU over 2^26 floats, fused (one kernel) and unfused
/// (one per op), profiled by the model above; dated so the text is stable.
std::string geluProfileJson() {
  Graph g = lecture::gelu(int64_t(1) << 26);
  std::vector<ProfiledRun> runs;
  for (bool fusion : {true, false}) {
    CompiledGraph c = compileFor(g, fusion, /*kernels=*/true);
    runs.push_back(profiledRun(c, syntheticProfile(c, fusion ? 0.969 : 0.967)));
  }
  DeviceProperties dev = DeviceProperties::assumedH200();
  dev.name = "NVIDIA H200";
  dev.queried = true;
  dev.totalMemory = 150754820096;
  return profileFileJson(dev, 4199, runs, "minijit 0.1.0 (synthetic: tests/unit/ProfileJsonTest.cpp)",
                         "2026-12-01T12:00:00Z");
}

/// Runs `command` through the shell; its exit status, and its output in `out`.
int runCommand(const std::string &command, std::string &out) {
  FILE *f = ::popen((command + " 2>&1").c_str(), "r");
  if (!f)
    return -1;
  char buf[4096];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0)
    out.append(buf, n);
  int status = ::pclose(f);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

std::string scratchFile(const std::string &name) {
  llvm::SmallString<128> dir;
  EXPECT_FALSE(llvm::sys::fs::createUniqueDirectory("minijit-profile-json", dir));
  return std::string(dir) + "/" + name;
}

std::string plotScript() { return std::string(MINIJIT_SOURCE_DIR) + "/scripts/plot.py"; }

} // namespace

TEST(PeakRates, H200FromItsSMsAndClock) {
  std::vector<PeakRate> peaks = peakRates(DeviceProperties::assumedH200());
  ASSERT_EQ(peaks.size(), 3u);
  EXPECT_EQ(peaks[0].unit, "cuda_cores");
  EXPECT_EQ(peaks[0].dtype, "f32");
  EXPECT_NEAR(peaks[0].flopsPerSecond, 132 * 1.98e9 * 256, 1e6); // 66.9 TFLOP/s
  EXPECT_EQ(peaks[1].unit, "tensor_cores");
  EXPECT_EQ(peaks[1].dtype, "f16");
  EXPECT_NEAR(peaks[1].flopsPerSecond, 132 * 1.98e9 * 4096, 1e6);
  EXPECT_EQ(peaks[2].dtype, "bf16");
  EXPECT_NE(peaks[1].source.find("132 SMs x 1980 MHz"), std::string::npos) << peaks[1].source;
  EXPECT_NE(peaks[1].source.find("(assumed)"), std::string::npos) << peaks[1].source;
}

TEST(PeakRates, AnArchitectureOutsideTheTableGetsNoRoof) {
  DeviceProperties dev;
  dev.ccMajor = 8;
  dev.ccMinor = 6; // consumer Ampere: CUDA cores known, tensor cores depend on the product
  std::vector<PeakRate> peaks = peakRates(dev);
  ASSERT_EQ(peaks.size(), 1u);
  EXPECT_EQ(peaks[0].unit, "cuda_cores");
  dev.ccMajor = 12;
  dev.ccMinor = 0;
  EXPECT_TRUE(peakRates(dev).empty());
  dev = DeviceProperties();
  dev.clockKHz = 0; // a driver that does not say
  EXPECT_TRUE(peakRates(dev).empty());
}

TEST(ProfileRecords, TensorCoreMatmulFlopsApartFromItsEpilogue) {
  Graph g("mm");
  Tensor a = g.input("a", DType::F16, {256, 512});
  Tensor b = g.input("b", DType::F16, {512, 128});
  g.output(tanh(matmul(a, b)), "y");
  CompiledGraph c = compileFor(g, true, false);
  std::vector<KernelDescription> ds = describeKernels(c);
  ASSERT_EQ(ds.size(), 1u);
  EXPECT_EQ(ds[0].kind, "matmul_wgmma"); // the H200's f16 template
  ASSERT_EQ(ds[0].flops.size(), 2u);
  EXPECT_EQ(ds[0].flops[0].unit, "tensor_cores");
  EXPECT_EQ(ds[0].flops[0].dtype, "f16");
  EXPECT_EQ(ds[0].flops[0].flops, 2 * 256 * 512 * 128);
  EXPECT_EQ(ds[0].flops[1].unit, "cuda_cores");
  EXPECT_EQ(ds[0].flops[0].flops + ds[0].flops[1].flops, c.program.kernels[0].flops);
  EXPECT_NE(ds[0].schedule.find("tensor cores"), std::string::npos) << ds[0].schedule;
  ASSERT_EQ(ds[0].fusionReasons.size(), 1u);
  EXPECT_EQ(ds[0].fusionReasons[0], "%y: graph output");
}

TEST(ProfileRecords, UnfusedKernelsSayFusionIsOff) {
  CompiledGraph c = compileFor(lecture::gelu(1024), false, false);
  std::vector<KernelDescription> ds = describeKernels(c);
  ASSERT_EQ(ds.size(), c.program.kernels.size());
  ASSERT_GT(ds.size(), 1u);
  EXPECT_EQ(ds[0].kind, "pointwise");
  ASSERT_EQ(ds[0].flops.size(), 1u);
  EXPECT_EQ(ds[0].flops[0].unit, "cuda_cores");
  ASSERT_FALSE(ds[0].fusionReasons.empty());
  EXPECT_NE(ds[0].fusionReasons[0].find("fusion is off"), std::string::npos) << ds[0].fusionReasons[0];
}

TEST(ProfileJson, KernelRecordHoldsEveryField) {
  llvm::Expected<llvm::json::Value> v = llvm::json::parse(geluProfileJson());
  ASSERT_TRUE(bool(v)) << llvm::toString(v.takeError());
  const llvm::json::Object &root = *v->getAsObject();
  EXPECT_EQ(root.getInteger("schema").getValueOr(-1), kProfileSchema);
  EXPECT_EQ(root.getString("kind").getValueOr(""), "profile");
  const llvm::json::Object *dev = root.getObject("device");
  ASSERT_TRUE(dev);
  EXPECT_EQ(dev->getNumber("copy_gbps").getValueOr(0), 4199.0);
  ASSERT_TRUE(dev->getArray("peaks"));
  EXPECT_EQ(dev->getArray("peaks")->size(), 3u);
  const llvm::json::Array *runs = root.getArray("runs");
  ASSERT_TRUE(runs);
  ASSERT_EQ(runs->size(), 2u);
  const llvm::json::Object &fused = *(*runs)[0].getAsObject();
  EXPECT_EQ(fused.getString("label").getValueOr(""), "fused");
  const llvm::json::Array &ks = *fused.getArray("kernels");
  ASSERT_EQ(ks.size(), 1u);
  const llvm::json::Object &k = *ks[0].getAsObject();
  for (const char *field :
       {"index", "name", "kind", "schedule", "time_us", "start_us", "bytes", "flops",
        "flops_by_dtype", "intensity", "gbps", "copy_fraction", "flops_per_s", "grid", "block",
        "blocks_per_sm", "waves", "last_wave_fill", "registers", "spill_bytes", "shared_bytes",
        "fusion_reasons"})
    EXPECT_TRUE(k.get(field)) << "missing " << field;
  EXPECT_EQ(k.getInteger("bytes").getValueOr(0), int64_t(2) << 28); // 2^26 floats read and written
  EXPECT_EQ(k.getInteger("grid").getValueOr(0), 65536);
  const llvm::json::Object *t = k.getObject("time_us");
  ASSERT_TRUE(t);
  EXPECT_LT(*t->getNumber("min"), *t->getNumber("median"));
  EXPECT_GT(*t->getNumber("max"), *t->getNumber("median"));
  EXPECT_NEAR(*k.getNumber("copy_fraction"), 0.969, 1e-9);
  const llvm::json::Object &unfused = *(*runs)[1].getAsObject();
  EXPECT_EQ(unfused.getBoolean("fusion").getValueOr(true), false);
  EXPECT_EQ(unfused.getArray("kernels")->size(), 9u);
}

// The round trip: the writer's output is what the plotting script accepts
// (its validator needs only Python 3), and a file of another schema version
// is refused by it with a message that says so.
TEST(ProfileJson, WriterOutputPassesThePlotScriptsValidator) {
  std::string text = geluProfileJson();
  if (const char *fixture = std::getenv("MINIJIT_WRITE_FIXTURE")) {
    std::string error;
    ASSERT_TRUE(writeTextFile(fixture, text, error)) << error; // tests/plot/profile_gelu.json
  }
  std::string path = scratchFile("gelu.json");
  std::string error;
  ASSERT_TRUE(writeTextFile(path, text, error)) << error;
  std::string out;
  int rc = runCommand(std::string(MINIJIT_PYTHON) + " " + plotScript() + " validate " + path, out);
  EXPECT_EQ(rc, 0) << out;
  EXPECT_NE(out.find("profile, NVIDIA H200, copy 4199 GB/s, 3 peaks; 2 runs, 10 kernels"),
            std::string::npos)
      << out;

  std::string newer = text;
  size_t at = newer.find("\"schema\": 1");
  ASSERT_NE(at, std::string::npos);
  newer.replace(at, 11, "\"schema\": 2");
  ASSERT_TRUE(writeTextFile(path, newer, error)) << error;
  out.clear();
  rc = runCommand(std::string(MINIJIT_PYTHON) + " " + plotScript() + " validate " + path, out);
  EXPECT_EQ(rc, 1) << out;
  EXPECT_NE(out.find("unknown schema version 2"), std::string::npos) << out;
  llvm::sys::fs::remove_directories(llvm::sys::path::parent_path(path));
}
