#pragma once
// Version and commit of this build. Defined in a generated version.cpp
// (cmake/version.cpp.in) so that a new commit recompiles one file, not the tree.
namespace gdr {
extern const char* const kVersion;
extern const char* const kGitCommit;
}  // namespace gdr
