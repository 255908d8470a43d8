# Run by `cmake --install`: copies minijit.h and the headers of ir/, compiler/,
# runtime/ and tools/ into <prefix>/include/minijit/, rewriting their includes
# of each other ("ir/Graph.h") to "minijit/ir/Graph.h": users include
# <minijit/minijit.h>, and no installed folder named ir/ or runtime/ can
# clash with one of theirs. Expects MINIJIT_SOURCE_DIR and MINIJIT_HEADER_DIR.
set(dest "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}/${MINIJIT_HEADER_DIR}")
file(GLOB_RECURSE headers RELATIVE "${MINIJIT_SOURCE_DIR}"
     "${MINIJIT_SOURCE_DIR}/ir/*.h" "${MINIJIT_SOURCE_DIR}/ir/*.def"
     "${MINIJIT_SOURCE_DIR}/compiler/*.h" "${MINIJIT_SOURCE_DIR}/compiler/*.def"
     "${MINIJIT_SOURCE_DIR}/runtime/*.h" "${MINIJIT_SOURCE_DIR}/runtime/*.def"
     "${MINIJIT_SOURCE_DIR}/tools/*.h" "${MINIJIT_SOURCE_DIR}/tools/*.def")
list(SORT headers)
foreach(header minijit.h ${headers})
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
