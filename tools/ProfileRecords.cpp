//===- tools/ProfileRecords.cpp - a compiled graph's kernels, described ---===//
#include "tools/ProfileRecords.h"

#include "compiler/CompileDetail.h"

namespace minijit {

std::vector<KernelDescription> describeKernels(const CompiledGraph &c) {
  std::vector<KernelDescription> ds;
  std::vector<KernelSummary> summaries = c.kernelSummaries();
  for (size_t k = 0; k < c.program.kernels.size(); ++k) {
    KernelDescription d;
    int64_t total = c.program.kernels[k].flops;
    if (k < c.detail->kernels.size()) {
      const CompiledKernel &ck = c.detail->kernels[k];
      d.kind = kernelTemplate(ck.schedule.kind()).name().str();
      d.schedule = describeSchedule(ck.schedule);
    }
    int64_t onTensorCores = 0;
    if (k < c.detail->kernels.size() && c.detail->kernels[k].lowered.matmul &&
        kernelTemplate(c.detail->kernels[k].schedule.kind()).usesTensorCores()) {
      const KMatmul &mm = *c.detail->kernels[k].lowered.matmul;
      onTensorCores = std::min(total, 2 * mm.M * mm.N * mm.K * mm.batch);
      d.flops.push_back({"tensor_cores", std::string(dtypeName(mm.dtype)), onTensorCores});
    }
    if (total - onTensorCores > 0 || d.flops.empty())
      d.flops.push_back({"cuda_cores", "f32", total - onTensorCores});
    if (k < summaries.size())
      d.fusionReasons = summaries[k].reasons;
    ds.push_back(std::move(d));
  }
  return ds;
}

ProfiledRun profiledRun(const CompiledGraph &c, Profile profile) {
  ProfiledRun r;
  r.fusion = c.detail->plan.fusion;
  r.label = r.fusion ? "fused" : "unfused";
  r.profile = std::move(profile);
  r.kernels = describeKernels(c);
  return r;
}

} // namespace minijit
