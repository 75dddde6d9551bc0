# Compiles one shader variant through a content-addressed cache shared by every build directory
# of the machine (the Release and sanitizer builds, CI's clean clone): the SPIR-V depends only
# on the compiler, its arguments and the shader sources, never on the build type, so a variant
# compiled once is copied afterwards. glslc -O takes seconds per variant and there are ~240.
# Run as: cmake -DCMD=<compiler|arg|...> -DOUT=<file.spv> -DSOURCES=<src|include|...>
#               [-DCACHE_DIR=<dir>] -P compile_cached.cmake
# (arguments joined with '|' so they survive the command line). An empty CACHE_DIR compiles
# directly. The cache is keyed by SHA-256 of the compiler binary, the command line (output path
# and checkout location excepted) and every source; a hit is copied, a miss compiled and then
# stored by rename, so concurrent builds never read a half-written entry.
cmake_minimum_required(VERSION 3.21)
string(REPLACE "|" ";" cmd "${CMD}")
string(REPLACE "|" ";" sources "${SOURCES}")
if(CACHE_DIR STREQUAL "")
  execute_process(COMMAND ${cmd} -o ${OUT} RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "shader compiler failed (${rc})")
  endif()
  return()
endif()

list(GET cmd 0 compiler)
file(SHA256 "${compiler}" key_material)
# The command names the shaders by absolute path; the checkout's location is left out of the
# key so that every clone and worktree of the machine shares the entries.
string(REPLACE "${CMAKE_CURRENT_LIST_DIR}" "<shaders>" located_cmd "${CMD}")
string(APPEND key_material "${located_cmd}")
foreach(src ${sources})
  file(SHA256 "${src}" h)
  string(APPEND key_material "${h}")
endforeach()
string(SHA256 key "${key_material}")
set(entry "${CACHE_DIR}/${key}.spv")

if(EXISTS "${entry}")
  file(COPY_FILE "${entry}" "${OUT}")
  return()
endif()
execute_process(COMMAND ${cmd} -o ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "shader compiler failed (${rc})")
endif()
file(MAKE_DIRECTORY "${CACHE_DIR}")
string(RANDOM LENGTH 12 tag)
file(COPY_FILE "${OUT}" "${entry}.${tag}.tmp")
file(RENAME "${entry}.${tag}.tmp" "${entry}")
