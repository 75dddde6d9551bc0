# The installable library (README: "Install"). The runtime is built as several internal static
# libraries (staticlm, staticlm_backends, ...); an embedder gets one of each kind instead:
#   libstaticlm.so.0  exports the C API of include/staticlm/staticlm.h and nothing else (a
#                     version script hides every other symbol); SONAME carries the ABI version.
#   libstaticlm.a     every object of the internal libraries in one archive.
# plus the header, a CMake package (find_package(staticlm CONFIG): staticlm::staticlm and
# staticlm::staticlm_static) and staticlm.pc for pkg-config.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The ABI version: bumped when a release removes or changes a declaration of staticlm.h
# (adding functions or enum values keeps it).
set(STATICLM_ABI_VERSION 0)

# Appends to `out_var` the internal static libraries (staticlm_*) that `target` links,
# transitively, so that libraries added later (the CUDA kernels) are picked up without edits.
function(staticlm_internal_libraries target out_var)
  set(found ${${out_var}})
  get_target_property(links ${target} LINK_LIBRARIES)
  foreach(item IN LISTS links)
    if(TARGET ${item} AND item MATCHES "^staticlm_" AND NOT item IN_LIST found)
      get_target_property(type ${item} TYPE)
      if(type STREQUAL "STATIC_LIBRARY" OR type STREQUAL "OBJECT_LIBRARY")
        list(APPEND found ${item})
        staticlm_internal_libraries(${item} found)
      endif()
    endif()
  endforeach()
  set(${out_var} ${found} PARENT_SCOPE)
endfunction()

set(STATICLM_INTERNAL_LIBRARIES staticlm)
staticlm_internal_libraries(staticlm STATICLM_INTERNAL_LIBRARIES)
set(STATICLM_OBJECTS "")
foreach(lib IN LISTS STATICLM_INTERNAL_LIBRARIES)
  list(APPEND STATICLM_OBJECTS $<TARGET_OBJECTS:${lib}>)
endforeach()

# What the objects need from the system; a static consumer links these itself (the CMake
# package and staticlm.pc's Libs.private name them).
find_package(Threads REQUIRED)
set(STATICLM_SYSTEM_LIBS Threads::Threads ${CMAKE_DL_LIBS})
set(STATICLM_PC_LIBS_PRIVATE "-lstdc++ -lm -pthread")
foreach(lib IN LISTS CMAKE_DL_LIBS)
  string(APPEND STATICLM_PC_LIBS_PRIVATE " -l${lib}")
endforeach()
set(STATICLM_CONFIG_DEPENDENCIES "find_dependency(Threads)")
if(STATICLM_HAVE_CUDA)
  # The CUDA backend links the static CUDA runtime (backends/cuda); it needs librt and libdl.
  list(APPEND STATICLM_SYSTEM_LIBS CUDA::cudart_static)
  get_target_property(STATICLM_CUDART_STATIC CUDA::cudart_static IMPORTED_LOCATION)
  get_filename_component(STATICLM_CUDART_DIR "${STATICLM_CUDART_STATIC}" DIRECTORY)
  string(APPEND STATICLM_PC_LIBS_PRIVATE " -L${STATICLM_CUDART_DIR} -lcudart_static -lrt")
  string(APPEND STATICLM_CONFIG_DEPENDENCIES "\nfind_dependency(CUDAToolkit)")
endif()

add_library(staticlm_shared SHARED ${STATICLM_OBJECTS})
target_link_libraries(staticlm_shared PRIVATE ${STATICLM_SYSTEM_LIBS})
set_target_properties(staticlm_shared PROPERTIES
  OUTPUT_NAME staticlm VERSION ${PROJECT_VERSION} SOVERSION ${STATICLM_ABI_VERSION}
  LINKER_LANGUAGE CXX LINK_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/staticlm.map)
target_link_options(staticlm_shared PRIVATE
  "LINKER:--version-script=${CMAKE_CURRENT_LIST_DIR}/staticlm.map")
if(NOT (STATICLM_SANITIZE OR STATICLM_TSAN OR STATICLM_FUZZ))
  # Every symbol resolved at link time; sanitizer runtimes are resolved by the executable.
  target_link_options(staticlm_shared PRIVATE "LINKER:--no-undefined")
endif()

add_library(staticlm_static STATIC ${STATICLM_OBJECTS})
# The C++ runtime too, so that a C program links it with the C driver.
target_link_libraries(staticlm_static INTERFACE ${STATICLM_SYSTEM_LIBS} stdc++ m)
set_target_properties(staticlm_static PROPERTIES OUTPUT_NAME staticlm LINKER_LANGUAGE CXX)

foreach(lib staticlm_shared staticlm_static)
  target_include_directories(${lib} INTERFACE $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
endforeach()
set_target_properties(staticlm_shared PROPERTIES EXPORT_NAME staticlm)
set_target_properties(staticlm_static PROPERTIES EXPORT_NAME staticlm_static)

# Component "runtime" is the shared library alone (what the Python wheel ships); "dev" the rest.
install(TARGETS staticlm_shared EXPORT staticlmTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT runtime NAMELINK_COMPONENT dev)
install(TARGETS staticlm_static EXPORT staticlmTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev)
install(FILES ${CMAKE_SOURCE_DIR}/include/staticlm/staticlm.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/staticlm COMPONENT dev)

set(STATICLM_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/staticlm)
install(EXPORT staticlmTargets NAMESPACE staticlm:: DESTINATION ${STATICLM_CMAKE_DIR}
        COMPONENT dev)
configure_package_config_file(${CMAKE_CURRENT_LIST_DIR}/staticlmConfig.cmake.in
  ${CMAKE_BINARY_DIR}/staticlmConfig.cmake INSTALL_DESTINATION ${STATICLM_CMAKE_DIR})
# Same major version: the ABI promise of README.
write_basic_package_version_file(${CMAKE_BINARY_DIR}/staticlmConfigVersion.cmake
  COMPATIBILITY SameMajorVersion)
install(FILES ${CMAKE_BINARY_DIR}/staticlmConfig.cmake
        ${CMAKE_BINARY_DIR}/staticlmConfigVersion.cmake
        DESTINATION ${STATICLM_CMAKE_DIR} COMPONENT dev)

# The .pc file finds the prefix from its own place (${pcfiledir}), so the installed tree can be
# moved, or installed with `cmake --install --prefix` other than the configured one.
file(RELATIVE_PATH STATICLM_PC_TO_PREFIX /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" STATICLM_PC_TO_PREFIX "${STATICLM_PC_TO_PREFIX}")
configure_file(${CMAKE_CURRENT_LIST_DIR}/staticlm.pc.in ${CMAKE_BINARY_DIR}/staticlm.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/staticlm.pc
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
