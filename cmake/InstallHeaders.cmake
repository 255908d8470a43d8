# Run by `cmake --install`: copies the public headers into
# <prefix>/include/minijit/, rewriting their includes of each other
# ("ir/Graph.h") to "minijit/ir/Graph.h": users include <minijit/minijit.h>, and
# no installed folder named ir/ or runtime/ can clash with one of theirs.
#
# The public headers are minijit.h and what it includes, transitively (its
# include closure), computed here so the list cannot go stale. They need only
# the C++20 standard library and CUDA's and DLPack's headers: a public header
# that includes an LLVM header or names the llvm namespace stops the install
# with an error, as does an include of a header that does not exist.
#
# Expects MINIJIT_SOURCE_DIR, and MINIJIT_HEADER_DIR unless MINIJIT_CHECK_ONLY
# is set: then it installs nothing and prints the closure (a ctest, run with
# cmake -P, so the check fails in the build tree already).

cmake_policy(VERSION 3.25)

# The closure of minijit.h, in the order it is found.
set(public "")
set(pending minijit.h)
set(includedBy_minijit.h "the package")
while(pending)
  list(POP_FRONT pending header)
  if(header IN_LIST public)
    continue()
  endif()
  if(NOT EXISTS "${MINIJIT_SOURCE_DIR}/${header}")
    message(FATAL_ERROR "public headers: ${includedBy_${header}} includes ${header}, which does "
                        "not exist")
  endif()
  list(APPEND public "${header}")
  file(READ "${MINIJIT_SOURCE_DIR}/${header}" text)
  if(text MATCHES "#[ \t]*include[ \t]*[<\"]((llvm|llvm-c)/[^>\"]*)")
    message(FATAL_ERROR "public headers: ${header} includes ${CMAKE_MATCH_1}; a header minijit.h "
                        "includes must need only the standard library (move the LLVM part into "
                        "a .cpp or an internal header)")
  endif()
  if(text MATCHES "llvm::|namespace llvm")
    message(FATAL_ERROR "public headers: ${header} names LLVM ('${CMAKE_MATCH_0}'); a header "
                        "minijit.h includes must need only the standard library")
  endif()
  string(REGEX MATCHALL "#[ \t]*include[ \t]*\"(ir|compiler|runtime|tools)/[^\"]+\"" includes
         "${text}")
  foreach(line IN LISTS includes)
    string(REGEX REPLACE "^.*\"([^\"]+)\"$" "\\1" included "${line}")
    if(NOT DEFINED includedBy_${included})
      set(includedBy_${included} "${header}")
    endif()
    list(APPEND pending "${included}")
  endforeach()
endwhile()
list(SORT public)

if(MINIJIT_CHECK_ONLY)
  list(LENGTH public count)
  string(REPLACE ";" " " shown "${public}")
  message(STATUS "public headers: ${count}, none includes LLVM: ${shown}")
  return()
endif()

set(dest "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${MINIJIT_HEADER_DIR}")
foreach(header IN LISTS public)
  file(READ "${MINIJIT_SOURCE_DIR}/${header}" text)
  string(REGEX REPLACE "#include \"(ir|compiler|runtime|tools)/" "#include \"minijit/\\1/" text
         "${text}")
  set(target "${dest}/${header}")
  if(EXISTS "${target}")
    file(READ "${target}" old)
    if(old STREQUAL text)
      message(STATUS "Up-to-date: ${target}")
      continue()
    endif()
  endif()
  message(STATUS "Installing: ${target}")
  file(WRITE "${target}" "${text}")
endforeach()
