# Compiles every layer probe of tests/layers/CMakeLists.txt with its own
# command from compile_commands.json (the flags of the layer it links, as
# that layer's sources get them; no make, so nothing else is rebuilt) and
# checks each outcome: "ok" probes compile, "fails" probes stop at their
# header. -DBUILD -DSOURCE -DEXPECT=name|header|outcome;...
cmake_minimum_required(VERSION 3.25)
# One "command" line per source in CMake's compile_commands.json; the
# probes' lines name their files (-c .../tests/layers/layer_*.cpp).
file(STRINGS ${BUILD}/compile_commands.json lines REGEX "^ *\"command\": .*/tests/layers/layer_[a-z_]+\\.cpp")
set(dir ${BUILD}/tests/layers)
set(names)
set(objects)
foreach(line IN LISTS lines)
  string(REGEX REPLACE ",$" "" line "${line}")
  string(JSON command GET "{${line}}" command)
  string(REGEX MATCH "layer_[a-z_]+\\.cpp" file "${command}")
  get_filename_component(name ${file} NAME_WE)
  separate_arguments(args UNIX_COMMAND "${command}")
  list(FIND args -o at)
  math(EXPR at "${at} + 1")
  list(GET args ${at} object)
  file(REMOVE ${dir}/${object})  # a stale object must not pass for a fresh one
  set(args_${name} ${args})
  list(APPEND names ${name})
  list(APPEND objects ${dir}/${object})
endforeach()
# One after another: run side by side (one execute_process), clang's
# messages of several probes interleaved and a probe's "file not found" was
# sometimes not read as its own (layers.enforced failed 2 in 4 in build-asan).
set(out "")
foreach(name IN LISTS names)
  execute_process(COMMAND ${args_${name}} WORKING_DIRECTORY ${dir} OUTPUT_VARIABLE o ERROR_VARIABLE o)
  string(APPEND out "${o}")
endforeach()
set(compiled)
foreach(name object IN ZIP_LISTS names objects)
  if(EXISTS ${object})
    list(APPEND compiled ${name})
  endif()
endforeach()
set(bad)
foreach(e IN LISTS EXPECT)
  string(REPLACE "|" ";" e "${e}")
  list(GET e 0 name)
  list(GET e 1 header)
  list(GET e 2 outcome)
  string(REPLACE "." "\\." header_re "${header}")
  # gcc: "x.cpp:1:10: fatal error: a/b.h: No such file"; clang: "... fatal error: 'a/b.h' file not found"
  set(missing "${name}\\.cpp:[0-9]+:[0-9]+: fatal error: '?${header_re}'?[: ]")
  if(outcome STREQUAL "fails" AND NOT out MATCHES "${missing}")
    list(APPEND bad "${name}: an include of ${header} was expected to fail for want of the header")
  elseif(outcome STREQUAL "ok" AND NOT name IN_LIST compiled)
    list(APPEND bad "${name}: an include of ${header} was expected to build")
  else()
    message(STATUS "${name}: #include \"${header}\" ${outcome}, as it should")
  endif()
endforeach()
# The same-folder lookup of "..." includes is the one way round the roots.
file(GLOB_RECURSE sources ${SOURCE}/src/*.h ${SOURCE}/src/*.cpp ${SOURCE}/src/*.cu
     ${SOURCE}/transports/*.h ${SOURCE}/transports/*.cpp ${SOURCE}/collectives/*.h ${SOURCE}/collectives/*.cpp)
foreach(f IN LISTS sources)
  file(STRINGS ${f} climbs REGEX "^[ \t]*#[ \t]*include[ \t]*\"\\.\\./")
  if(climbs)
    list(APPEND bad "${f}: ${climbs} (include through the layer's root, not \"../\")")
  endif()
endforeach()
if(bad)
  list(JOIN bad "\n  " text)
  message(FATAL_ERROR "layers not enforced:\n  ${text}\nbuild output:\n${out}")
endif()
list(LENGTH EXPECT n)
message(STATUS "layers enforced: ${n} probes as expected, no \"../\" include")
