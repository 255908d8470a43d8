//===- tests/gpu/DLPackShim.cpp - a C API for the PyTorch round trip ------===//
// Built as the shared library minijit_dlpack_shim, which dlpack_torch.py loads
// with ctypes: compile a graph from text, take tensors from DLPack capsules,
// run, and hand the outputs back as DLPack. Not part of minijit_gpu_tests.
// Every call returns null or -1 on failure, with the message in
// mjs_last_error(); nothing throws across the C boundary.
//===----------------------------------------------------------------------===//
#include "minijit.h"

#include <map>
#include <string>

#define MJS_API extern "C" __attribute__((visibility("default")))

using namespace minijit;

namespace {

thread_local std::string LastError;

/// Opened once per ordinal and never closed: tensors handed to PyTorch may
/// outlive any point where closing would be safe, up to the process's exit.
const Device &device(int ordinal) {
  static auto *devices = new std::map<int, Device>();
  auto it = devices->find(ordinal);
  if (it == devices->end())
    it = devices->emplace(ordinal, Device::open(ordinal)).first;
  return it->second;
}

/// fn(), or `onError` with the message kept when it throws.
template <typename T, typename Fn> T guarded(T onError, Fn &&fn) {
  try {
    return fn();
  } catch (const std::exception &e) {
    LastError = e.what();
  }
  return onError;
}

} // namespace

/// The message of the last failed call on this thread.
MJS_API const char *mjs_last_error() { return LastError.c_str(); }

/// Parses `text` (the text format; its first graph) and compiles it for
/// device `ordinal`. Returns an Executable handle.
MJS_API void *mjs_compile(const char *text, int ordinal) {
  return guarded<void *>(nullptr, [&] {
    std::vector<Graph> graphs = parseGraphs(text, "<python>");
    if (graphs.empty())
      throw GraphError("mjs_compile: the text holds no graph");
    return new Executable(compile(graphs.front(), device(ordinal)));
  });
}

MJS_API void mjs_free_executable(void *exe) { delete static_cast<Executable *>(exe); }

/// Takes a DLManagedTensor (from a "dltensor" capsule) as a tensor handle.
/// On success minijit owns it (rename the capsule "used_dltensor"); on
/// failure (null) the caller still does.
MJS_API void *mjs_from_dlpack(void *managed, int ordinal) {
  return guarded<void *>(nullptr, [&] {
    return new DeviceTensor(fromDLPack(device(ordinal), static_cast<DLManagedTensor *>(managed)));
  });
}

/// A DLManagedTensor sharing the tensor's memory (for a "dltensor" capsule).
MJS_API void *mjs_to_dlpack(void *tensor) {
  return guarded<void *>(nullptr, [&] { return toDLPack(*static_cast<DeviceTensor *>(tensor)); });
}

/// Runs a DLManagedTensor's deleter: for a capsule nobody consumed.
MJS_API void mjs_delete_dlpack(void *managed) {
  auto *m = static_cast<DLManagedTensor *>(managed);
  if (m && m->deleter)
    m->deleter(m);
}

MJS_API void mjs_free_tensor(void *tensor) { delete static_cast<DeviceTensor *>(tensor); }

/// The device address of a tensor handle's first element.
MJS_API unsigned long long mjs_tensor_address(void *tensor) {
  return static_cast<DeviceTensor *>(tensor)->data();
}

/// Bytes held by live minijit buffers on device `ordinal`.
MJS_API long long mjs_bytes_in_use(int ordinal) {
  return guarded<long long>(-1, [&] { return device(ordinal).allocator().stats().bytesInUse; });
}

/// Runs `exe` on `numInputs` tensor handles and waits. With `allocate`, stores
/// new output handles in `outputs`; otherwise writes into the `numOutputs`
/// handles given there. Returns 0, or -1.
MJS_API int mjs_run(void *exe, void *const *inputs, int numInputs, void **outputs, int numOutputs,
                    int allocate) {
  return guarded<int>(-1, [&] {
    auto &e = *static_cast<Executable *>(exe);
    std::vector<DeviceTensor> in;
    for (int i = 0; i < numInputs; ++i)
      in.push_back(*static_cast<DeviceTensor *>(inputs[i]));
    if (!allocate) {
      std::vector<DeviceTensor> out;
      for (int i = 0; i < numOutputs; ++i)
        out.push_back(*static_cast<DeviceTensor *>(outputs[i]));
      e.enqueue(in, out);
      e.synchronize();
      return 0;
    }
    std::vector<DeviceTensor> out = e.run(in);
    if (out.size() != static_cast<size_t>(numOutputs))
      throw GraphError("mjs_run: the graph has " + std::to_string(out.size()) +
                       " outputs, room was given for " + std::to_string(numOutputs));
    for (int i = 0; i < numOutputs; ++i)
      outputs[i] = new DeviceTensor(std::move(out[i]));
    return 0;
  });
}
