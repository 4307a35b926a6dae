# vlog's CMake package, installed by `make install` (and the Debian
# package) as <prefix>/lib/cmake/vlog/vlogConfig.cmake:
#
#   find_package(vlog 0.1 REQUIRED)
#   target_link_libraries(mydaemon PRIVATE vlog::vlog)         # libvlog.so.0
#   target_link_libraries(mydaemon PRIVATE vlog::vlog_static)  # libvlog.a
#
# Both targets carry the include directory. The paths are found from this
# file's own place, so a staged or moved installation works as installed.

get_filename_component(_vlog_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

set(_vlog_missing "")
foreach(_vlog_file lib/libvlog.so.0 lib/libvlog.a include/vlog.h include/vlog_gen.h)
  if(NOT EXISTS "${_vlog_prefix}/${_vlog_file}")
    list(APPEND _vlog_missing "${_vlog_prefix}/${_vlog_file}")
  endif()
endforeach()
if(_vlog_missing)
  set(vlog_FOUND FALSE)
  set(vlog_NOT_FOUND_MESSAGE "vlog's files are missing: ${_vlog_missing}")
  unset(_vlog_missing)
  unset(_vlog_prefix)
  return()
endif()
unset(_vlog_missing)

if(NOT TARGET vlog::vlog)
  add_library(vlog::vlog SHARED IMPORTED)
  set_target_properties(vlog::vlog PROPERTIES
    IMPORTED_LOCATION "${_vlog_prefix}/lib/libvlog.so.0"
    IMPORTED_SONAME "libvlog.so.0"
    INTERFACE_INCLUDE_DIRECTORIES "${_vlog_prefix}/include")
endif()

if(NOT TARGET vlog::vlog_static)
  # What libvlog.a needs besides libc, as vlog.pc's Libs.private says.
  include(CMakeFindDependencyMacro)
  set(THREADS_PREFER_PTHREAD_FLAG ON)
  find_dependency(Threads)
  add_library(vlog::vlog_static STATIC IMPORTED)
  set_target_properties(vlog::vlog_static PROPERTIES
    IMPORTED_LOCATION "${_vlog_prefix}/lib/libvlog.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_vlog_prefix}/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;${CMAKE_DL_LIBS};m")
endif()

unset(_vlog_prefix)
