# Sets GDR_GIT_COMMIT; -DGDR_GIT_COMMIT=... on the command line wins.
if(NOT GDR_GIT_COMMIT)
  # Only this folder's own checkout counts: a tarball unpacked inside some
  # other repository must not take that repository's commit.
  execute_process(COMMAND git rev-parse --show-toplevel
                  WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                  OUTPUT_VARIABLE _gdr_top OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
  if(_gdr_top AND EXISTS "${_gdr_top}" AND EXISTS "${CMAKE_SOURCE_DIR}")
    file(REAL_PATH "${_gdr_top}" _gdr_top)
    file(REAL_PATH "${CMAKE_SOURCE_DIR}" _gdr_src)
    if(_gdr_top STREQUAL _gdr_src)
      execute_process(COMMAND git rev-parse --short=12 HEAD
                      WORKING_DIRECTORY ${CMAKE_SOURCE_DIR}
                      OUTPUT_VARIABLE _gdr_commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
    endif()
  endif()
  if(NOT _gdr_commit AND EXISTS ${CMAKE_SOURCE_DIR}/.git-commit)
    file(STRINGS ${CMAKE_SOURCE_DIR}/.git-commit _gdr_commit LIMIT_COUNT 1)
    string(STRIP "${_gdr_commit}" _gdr_commit)
  endif()
  if(NOT _gdr_commit)
    set(_gdr_commit unknown)
    message(WARNING "gdrbench: no git checkout and no .git-commit file: the commit is 'unknown' "
                    "(pass -DGDR_GIT_COMMIT=<sha> or build from a jobs/dist.sh tarball)")
  endif()
  set(GDR_GIT_COMMIT "${_gdr_commit}")  # not cached: a new commit is seen on the next configure
endif()
message(STATUS "gdrbench ${PROJECT_VERSION}, commit ${GDR_GIT_COMMIT}")
