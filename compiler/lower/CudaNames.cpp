//===- compiler/lower/CudaNames.cpp - IR names as C++ identifiers ---------===//
#include "compiler/lower/CudaNames.h"

#include "llvm/ADT/StringSet.h"

namespace minijit {

std::string cudaIdentifier(llvm::StringRef irName) {
  std::string s;
  for (char c : irName)
    s += (c == '.') ? '_' : c;
  if (s.empty() || (s[0] >= '0' && s[0] <= '9'))
    s = "v" + s;
  llvm::StringRef r(s);
  if (r.startswith("mj_") || r.startswith("MJ_") || r.startswith("Mj") || r.startswith("__"))
    s = "v_" + s;
  return s;
}

bool isReservedName(llvm::StringRef name) {
  static const llvm::StringSet<> names = {
      // C++ and CUDA words a value name could collide with
      "alignas", "alignof", "and", "asm", "auto", "bool", "break", "case", "catch", "char",
      "class", "const", "constexpr", "const_cast", "continue", "decltype", "default", "delete",
      "do", "double", "dynamic_cast", "else", "enum", "explicit", "export", "extern", "false",
      "float", "for", "friend", "goto", "if", "inline", "int", "long", "mutable", "namespace",
      "new", "noexcept", "not", "nullptr", "operator", "or", "private", "protected", "public",
      "register", "reinterpret_cast", "return", "short", "signed", "sizeof", "static",
      "static_assert", "static_cast", "struct", "switch", "template", "this", "throw", "true",
      "try", "typedef", "typeid", "typename", "union", "unsigned", "using", "virtual", "void",
      "volatile", "while", "xor", "half", "dim3", "threadIdx", "blockIdx", "blockDim", "gridDim",
      "warpSize", "min", "max", "uint2", "uint4", "float4", "int4",
      // the emitter's own locals
      "i", "vi", "row", "rowRaw", "rowValid", "k", "kv", "lane", "it", "j", "item", "first",
      "part", "b", "m", "n", "kk", "acc", "tile", "warp", "wm", "wn", "m0", "n0", "mi", "ni", "c",
      "t", "s", "p", "ii", "jj", "As", "Bs", "aBatch", "bBatch", "group", "firstM", "groupRows",
      "kTiles", "tx", "ty", "gm", "gn", "gk", "r", "e", "ok", "af", "bfr", "k0", "k16", "ar",
      "br", "loadTiles", "lead", "kj", "inRow", "tiles", "inBatch", "phase", "stage", "descA",
      "descB", "mh", "slot", "done", "nv", "float2", "make_float2"};
  return names.count(name) > 0;
}

} // namespace minijit
