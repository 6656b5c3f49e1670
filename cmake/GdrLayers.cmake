# The layers the build enforces (docs/developers/layers.md):
#
#   app          seven folders of src/, one a floor (src/CMakeLists.txt): commands,
#                sweep, planning, outputs, verdicts, record, options
#   collectives  collectives/: the tests and the library reference rows
#   transports   transports/: one folder per transport, and the staged path
#   memory       src/memory/: the memory kinds      doctor  src/doctor/
#   core         src/core/: errors, bootstrap, datatypes, waits, options registry
#
# Each layer is one OBJECT library (OBJECT keeps the self-registering
# transports, memory kinds and tests from being dropped by the linker) that
# links only the layers below it. Its headers are reachable through one
# include root of its own, ${CMAKE_BINARY_DIR}/layers/<target>/, holding
# symbolic links named as the sources spell their includes ("src/core/x.h"
# and "core/x.h" both), one per header of the layer's folder and none for its
# sub-folders (transports/mpi/, src/memory/cuda/): the layers above see
# transports/transport.h and src/memory/memory.h, never a transport's or a
# memory kind's own headers. No root covers the whole source tree (only the
# app layer, the top, adds the source folder), so an include that runs upward
# or sideways, or into a sub-folder, finds no file and fails to build;
# tests/layers shows it does.

# gdr_add_layer(<target> FOLDERS <folder>... [BELOW <layer target>...])
function(gdr_add_layer target)
  cmake_parse_arguments(PARSE_ARGV 1 arg "" "" "FOLDERS;BELOW")
  add_library(${target} OBJECT)
  set(root ${CMAKE_BINARY_DIR}/layers/${target})
  file(MAKE_DIRECTORY ${root})
  # Links from an older configure go first: whole-folder links (removed as
  # links, never followed) and links of headers since deleted.
  foreach(folder IN LISTS arg_FOLDERS)
    get_filename_component(leaf ${folder} NAME)
    foreach(name IN ITEMS ${folder} ${leaf})
      if(IS_SYMLINK ${root}/${name})
        file(REMOVE ${root}/${name})
      endif()
    endforeach()
  endforeach()
  file(GLOB_RECURSE stale ${root}/*)
  if(stale)
    file(REMOVE ${stale})
  endif()
  foreach(folder IN LISTS arg_FOLDERS)
    get_filename_component(leaf ${folder} NAME)
    set(names ${folder} ${leaf})
    list(REMOVE_DUPLICATES names)
    # The folder's own headers, one link each, and none of its sub-folders:
    # one transport's folder, one memory kind's folder, is the layer's inside
    # (its own sources reach it by the same-folder lookup of "..." includes).
    # CONFIGURE_DEPENDS: a header added or removed re-runs this at build time.
    file(GLOB headers CONFIGURE_DEPENDS RELATIVE ${PROJECT_SOURCE_DIR}/${folder}
         ${PROJECT_SOURCE_DIR}/${folder}/*.h)
    foreach(name IN LISTS names)
      file(MAKE_DIRECTORY ${root}/${name})
      foreach(header IN LISTS headers)
        file(CREATE_LINK ${PROJECT_SOURCE_DIR}/${folder}/${header} ${root}/${name}/${header} SYMBOLIC)
      endforeach()
    endforeach()
  endforeach()
  target_include_directories(${target} PUBLIC ${root})
  target_link_libraries(${target} PUBLIC ${arg_BELOW})
  target_compile_options(${target} PRIVATE -Wall -Wextra)
  set_property(GLOBAL APPEND PROPERTY GDR_LAYERS ${target})
endfunction()

# gdr_all: every layer's objects and the app's usage requirements, for
# executables (gdrbench, the test programs). An OBJECT library's objects go
# only to targets that link it directly, hence the explicit list.
function(gdr_add_all_layers)
  get_property(layers GLOBAL PROPERTY GDR_LAYERS)
  add_library(gdr_all INTERFACE)
  target_link_libraries(gdr_all INTERFACE gdr_app)
  foreach(layer IN LISTS layers)
    target_sources(gdr_all INTERFACE $<TARGET_OBJECTS:${layer}>)
  endforeach()
endfunction()
