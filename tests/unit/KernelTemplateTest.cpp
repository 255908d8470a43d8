// compiler/templates: one template per schedule kind in the registry, and
// what the pipeline takes from the interface (descriptions in the kernel's
// header, the Hopper matmul's target, persistent grid and TMA descriptors).
#include "compiler/CompileDetail.h"
#include "compiler/Compiler.h"
#include "compiler/templates/KernelTemplate.h"
#include "ir/Parser.h"

#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <variant>
#include <vector>

using namespace minijit;

namespace {

CompiledGraph lowered(const std::string &text, const std::string &arch) {
  ::unsetenv("MINIJIT_SCHEDULE");
  CompileOptions opt;
  opt.device = DeviceProperties::assumedH200();
  opt.arch = arch;
  opt.compileKernels = false;
  opt.tuning = CompileOptions::Tuning::Off;
  return compileGraph(parseGraphs(text)[0], opt);
}

const char *kF16Matmul = "graph g(%a: f16[1024, 512], %b: f16[512, 1024]) {\n"
                         "  %c = matmul %a, %b\n  return %c\n}\n";
const char *kSigmoid = "graph g(%x: f32[1048577]) {\n  %y = sigmoid %x\n  return %y\n}\n";

TEST(KernelTemplate, EveryScheduleKindHasItsOwnTemplate) {
  constexpr size_t kinds = std::variant_size_v<decltype(Schedule::params)>;
  std::set<std::string> names;
  for (size_t i = 0; i < kinds; ++i) {
    ScheduleKind kind = static_cast<ScheduleKind>(i);
    const KernelTemplate &t = kernelTemplate(kind);
    EXPECT_EQ(t.kind(), kind) << i;
    EXPECT_FALSE(t.name().empty()) << i;
    EXPECT_TRUE(names.insert(t.name().str()).second) << "two templates named " << t.name().str();
  }
}

/// A default schedule of each template, in Templates.def's order.
std::vector<Schedule> oneOfEachKind() {
  return {Schedule{PointwiseSchedule{}},
          Schedule{RowSchedule{}},
          Schedule{ColumnSchedule{}},
          Schedule{MatmulSimtSchedule{}},
          Schedule{MatmulMmaSchedule{}},
          Schedule{TransposeSchedule{}},
          Schedule{ScanSchedule{}},
          Schedule{MatmulWgmmaSchedule{}},
          Schedule{AttentionSchedule{}},
          Schedule{AttentionMmaSchedule{}},
          Schedule{AttentionBackwardSchedule{}},
          Schedule{AttentionWgmmaSchedule{}}};
}

// Templates.def makes ScheduleKind and Schedule::params from one list: each
// kind holds its own template's parameter struct.
TEST(KernelTemplate, EachKindHoldsItsTemplatesParameters) {
  std::vector<Schedule> all = oneOfEachKind();
  ASSERT_EQ(all.size(), std::variant_size_v<decltype(Schedule::params)>);
  std::vector<ScheduleKind> kinds = {
      ScheduleKind::Pointwise,    ScheduleKind::InnerRow,          ScheduleKind::OuterCol,
      ScheduleKind::MatmulSimt,   ScheduleKind::MatmulMma,         ScheduleKind::Transpose,
      ScheduleKind::Scan,         ScheduleKind::MatmulWgmma,       ScheduleKind::Attention,
      ScheduleKind::AttentionMma, ScheduleKind::AttentionBackward, ScheduleKind::AttentionWgmma};
  for (size_t i = 0; i < all.size(); ++i)
    EXPECT_EQ(all[i].kind(), kinds[i]) << kernelTemplate(kinds[i]).name().str();
}

// A kernel that serves many sizes keeps its bucket's text where the template
// takes its extent at launch (KernelTemplate::sizeGridForExtent): the grid
// of a pointwise kernel, a row reduction and the matmuls; the others hold
// their extent in the kernel's text.
TEST(KernelTemplate, TemplatesThatSizeTheirGridAtLaunch) {
  DeviceProperties dev = DeviceProperties::assumedH200();
  LoweredKernel k;
  k.numel = 1000;
  k.rows = 10;
  k.matmul = KMatmul{};
  k.matmul->M = 300;
  k.matmul->N = 64;
  k.matmul->batch = 2;
  std::set<ScheduleKind> sized;
  for (Schedule s : oneOfEachKind())
    if (kernelTemplate(s.kind()).sizeGridForExtent(s, k, dev))
      sized.insert(s.kind());
  EXPECT_EQ(sized, (std::set<ScheduleKind>{ScheduleKind::Pointwise, ScheduleKind::InnerRow,
                                           ScheduleKind::MatmulSimt, ScheduleKind::MatmulMma,
                                           ScheduleKind::MatmulWgmma}));
  // the grids of those sizes: 1000 elements in vectors of 1, 256 a block;
  // a block a row; 3 tiles of 128 along m, 1 along n, 2 batches
  std::vector<Schedule> all = oneOfEachKind();
  for (Schedule &s : all)
    kernelTemplate(s.kind()).sizeGridForExtent(s, k, dev);
  EXPECT_EQ(all[0].geometry().grid, 4);
  EXPECT_EQ(all[1].geometry().grid, 10);
  EXPECT_EQ(all[3].geometry().grid, 3 * 1 * 2);
  EXPECT_EQ(all[3].as<MatmulSimtSchedule>().tilesM, 3);
}

// chooseSchedule reaches each family's rules through the one template that
// carries them (KernelTemplate::rulesFor, choose).
TEST(KernelTemplate, EachFamilysRulesSitOnOneTemplate) {
  constexpr size_t kinds = std::variant_size_v<decltype(Schedule::params)>;
  std::map<KernelKind, std::vector<std::string>> carriers;
  for (size_t i = 0; i < kinds; ++i) {
    const KernelTemplate &t = kernelTemplate(static_cast<ScheduleKind>(i));
    for (KernelKind k : t.rulesFor())
      carriers[k].push_back(t.name().str());
  }
  using Names = std::vector<std::string>;
  EXPECT_EQ(carriers[KernelKind::Pointwise], Names{"pointwise"});
  EXPECT_EQ(carriers[KernelKind::Reduction], Names{"inner_row"});
  EXPECT_EQ(carriers[KernelKind::Matmul], Names{"matmul_simt"});
  EXPECT_EQ(carriers[KernelKind::Scan], Names{"scan"});
  EXPECT_EQ(carriers[KernelKind::Attention], Names{"attention"});
  EXPECT_EQ(carriers[KernelKind::AttentionBackwardKV], Names{"attention_backward"});
  EXPECT_EQ(carriers[KernelKind::AttentionBackwardQ], Names{"attention_backward"});
}

TEST(KernelTemplate, OverrideKeysAreScheduleOverridesKeys) {
  constexpr size_t kinds = std::variant_size_v<decltype(Schedule::params)>;
  for (size_t i = 0; i < kinds; ++i) {
    const KernelTemplate &t = kernelTemplate(static_cast<ScheduleKind>(i));
    EXPECT_FALSE(t.overrideKeys().empty()) << t.name().str();
    for (llvm::StringRef key : t.overrideKeys()) {
      Expected<ScheduleOverrides> o = parseScheduleOverrides(key.str() + "=1");
      ASSERT_TRUE(o) << t.name().str() << ": " << o.error();
      EXPECT_EQ(o->str(), key.str() + "=1");
    }
  }
}

TEST(KernelTemplate, NamesAreTheProfileRecordsSpellings) {
  EXPECT_EQ(kernelTemplate(ScheduleKind::Pointwise).name(), "pointwise");
  EXPECT_EQ(kernelTemplate(ScheduleKind::InnerRow).name(), "inner_row");
  EXPECT_EQ(kernelTemplate(ScheduleKind::OuterCol).name(), "outer_col");
  EXPECT_EQ(kernelTemplate(ScheduleKind::MatmulSimt).name(), "matmul_simt");
  EXPECT_EQ(kernelTemplate(ScheduleKind::MatmulMma).name(), "matmul_mma");
  EXPECT_EQ(kernelTemplate(ScheduleKind::MatmulWgmma).name(), "matmul_wgmma");
  EXPECT_EQ(kernelTemplate(ScheduleKind::Transpose).name(), "transpose");
  EXPECT_EQ(kernelTemplate(ScheduleKind::Scan).name(), "scan");
  EXPECT_EQ(kernelTemplate(ScheduleKind::Attention).name(), "attention");
  EXPECT_EQ(kernelTemplate(ScheduleKind::AttentionMma).name(), "attention_mma");
}

TEST(KernelTemplate, OnlyTheTensorCoreTemplatesCountTensorCoreFlops) {
  constexpr size_t kinds = std::variant_size_v<decltype(Schedule::params)>;
  for (size_t i = 0; i < kinds; ++i) {
    ScheduleKind kind = static_cast<ScheduleKind>(i);
    EXPECT_EQ(kernelTemplate(kind).usesTensorCores(),
              kind == ScheduleKind::MatmulMma || kind == ScheduleKind::MatmulWgmma ||
                  kind == ScheduleKind::AttentionMma || kind == ScheduleKind::AttentionWgmma)
        << i;
  }
}

TEST(KernelTemplate, KernelHeaderCarriesTheTemplatesDescription) {
  CompiledGraph g = lowered(kSigmoid, "");
  const CompiledKernel &k = g.detail->kernels[0];
  const KernelTemplate &t = kernelTemplate(k.schedule.kind());
  std::string line = "// schedule: " + t.describe(k.schedule, GridText::Number);
  EXPECT_NE(emitKernel(k.lowered, k.schedule, "k").find(line), std::string::npos) << line;
}

TEST(KernelTemplate, HopperMatmulLaunchesPersistentForSm90aWithTensorMaps) {
  CompiledGraph g = lowered(kF16Matmul, "sm_90");
  ASSERT_EQ(g.detail->kernels[0].schedule.kind(), ScheduleKind::MatmulWgmma);
  const ProgramKernel &pk = g.program.kernels[0];
  EXPECT_EQ(pk.arch, "sm_90a");
  EXPECT_TRUE(pk.persistent);
  EXPECT_EQ(pk.tensorMaps.size(), 2u);
  EXPECT_EQ(kernelTemplate(ScheduleKind::MatmulWgmma).requiredRegisters(), 168u);
}

TEST(KernelTemplate, PointwiseLaunchKeepsTheGraphsTarget) {
  CompiledGraph g = lowered(kSigmoid, "sm_90");
  ASSERT_EQ(g.detail->kernels[0].schedule.kind(), ScheduleKind::Pointwise);
  const ProgramKernel &pk = g.program.kernels[0];
  EXPECT_EQ(pk.arch, "sm_90");
  EXPECT_FALSE(pk.persistent);
  EXPECT_FALSE(pk.coResident);
  EXPECT_TRUE(pk.tensorMaps.empty());
  EXPECT_EQ(kernelTemplate(ScheduleKind::Pointwise).requiredRegisters(), 0u);
}

} // namespace
