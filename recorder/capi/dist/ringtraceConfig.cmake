# ringtrace's C library for CMake: find_package(ringtrace) gives the imported target
# ringtrace::ringtrace (the static library, its header directory and the system libraries
# it needs). Relocatable: every path is relative to this file (PREFIX/lib/cmake/ringtrace).
get_filename_component(_ringtrace_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)

if(NOT TARGET ringtrace::ringtrace)
  find_package(Threads REQUIRED)
  add_library(ringtrace::ringtrace STATIC IMPORTED)
  set_target_properties(ringtrace::ringtrace PROPERTIES
    IMPORTED_LOCATION "${_ringtrace_prefix}/lib/libringtrace.a"
    INTERFACE_INCLUDE_DIRECTORIES "${_ringtrace_prefix}/include"
    INTERFACE_LINK_LIBRARIES "Threads::Threads;dl;m;rt;gcc_s")
endif()

set(ringtrace_INCLUDE_DIRS "${_ringtrace_prefix}/include")
set(ringtrace_LIBRARIES ringtrace::ringtrace)
unset(_ringtrace_prefix)
