# Enforces the arrows between areas (docs/architecture.md) at build time: each area's library is linked alone into
# a small executable with all of its objects (--whole-archive) and only the libraries it declares. A call into an
# area it does not link -- an include across a missing arrow -- leaves an undefined symbol and fails the build
# there, naming the area. The declared links are also written to area_dependencies.txt, which the `layering` test
# (tests/layering_test.sh) checks every #include against.

function(swift_link_check library)
  set(name link_check_${library})
  add_executable(${name} ${CMAKE_SOURCE_DIR}/cmake/link_check_main.cpp)
  target_link_libraries(${name} PRIVATE -Wl,--whole-archive $<TARGET_FILE:${library}> -Wl,--no-whole-archive ${library})
  set_target_properties(${name} PROPERTIES RUNTIME_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/link_checks)
endfunction()

# area_dependencies.txt: one line per area library, "<library> <area folder> <linked swift libraries...>".
function(swift_write_area_dependencies path)
  set(text "")
  foreach(library ${ARGN})
    get_target_property(area ${library} SWIFT_AREA)
    get_target_property(links ${library} SWIFT_AREA_LINKS)
    set(swift_links "")
    foreach(link ${links})
      if(link MATCHES "^swift_")
        list(APPEND swift_links ${link})
      endif()
    endforeach()
    string(REPLACE ";" " " swift_links "${swift_links}")
    string(APPEND text "${library} ${area} ${swift_links}\n")
  endforeach()
  file(WRITE ${path} "${text}")
endfunction()
