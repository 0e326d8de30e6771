# find_package(ringtrace X.Y) accepts this install when it is X.Y or newer with the same
# major version (0.x: the same minor, as Cargo reads 0.x versions).
set(PACKAGE_VERSION "@VERSION@")
if(PACKAGE_FIND_VERSION)
  string(REGEX MATCH "^([0-9]+)\\.([0-9]+)" _ringtrace_have "${PACKAGE_VERSION}")
  set(_ringtrace_major "${CMAKE_MATCH_1}")
  set(_ringtrace_minor "${CMAKE_MATCH_2}")
  if(PACKAGE_VERSION VERSION_LESS PACKAGE_FIND_VERSION
     OR NOT PACKAGE_FIND_VERSION_MAJOR EQUAL _ringtrace_major
     OR (_ringtrace_major EQUAL 0 AND NOT PACKAGE_FIND_VERSION_MINOR EQUAL _ringtrace_minor))
    set(PACKAGE_VERSION_COMPATIBLE FALSE)
  else()
    set(PACKAGE_VERSION_COMPATIBLE TRUE)
    if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
      set(PACKAGE_VERSION_EXACT TRUE)
    endif()
  endif()
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
endif()
