// A GeLU graph built, compiled and (with a GPU) run through an installed
// minijit: what another project's code looks like.
#include <minijit/minijit.h>

#include <iostream>

int main() {
  using namespace minijit;
  Graph g("gelu");
  Tensor x = g.input("x", DType::F32, {1 << 20});
  g.output(gelu(x, GeluForm::Tanh), "y");
  try {
    CompiledGraph c = compileGraph(g);
    std::cout << "minijit " << minijitVersion() << ": " << c.numKernels() << " kernel\n";
    for (const KernelSummary &k : c.kernelSummaries())
      std::cout << "  " << k.name << " (" << k.schedule << "): reads " << k.bytesRead
                << " bytes, writes " << k.bytesWritten << "\n";
    std::string why;
    if (!Device::available(&why)) {
      std::cout << "no GPU (" << why << "): compiled only\n";
      return 0;
    }
    Device gpu = Device::open();
    Executable exe = compile(g, gpu);
    std::vector<HostTensor> in = {HostTensor::random(DType::F32, {1 << 20}, 1)};
    CompareResult r = compareTensors(exe.run(in)[0], evaluate(g, in)[0],
                                     toleranceFor(g, g.outputs()[0]));
    std::cout << "on " << gpu.properties().name << ": " << r.summary << "\n";
    return r.ok ? 0 : 1;
  } catch (const Error &e) {
    std::cerr << "error: " << e.what() << "\n";
    return 1;
  }
}
