//===- runtime/DriverHandle.cpp - driver objects that release themselves --===//
#include "runtime/DriverHandle.h"

#include "runtime/Driver.h"

namespace minijit {

// A handle exists only once the driver created it, so Driver::get() has
// succeeded before and does not throw here.
void unloadModule(CUmodule m) { Driver::get().cuModuleUnload(m); }
void destroyStream(CUstream s) { Driver::get().cuStreamDestroy(s); }
void destroyEvent(CUevent e) { Driver::get().cuEventDestroy(e); }
void destroyGraph(CUgraph g) { Driver::get().cuGraphDestroy(g); }
void destroyGraphExec(CUgraphExec g) { Driver::get().cuGraphExecDestroy(g); }

} // namespace minijit
