// Compiled by the public_headers_compile test (tests/CMakeLists.txt) with
// the standard library, CUDA's and DLPack's include folders and nothing of
// LLVM's: the header users include needs no more.
#include "minijit.h"
