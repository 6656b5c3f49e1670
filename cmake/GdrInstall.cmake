# Install tree (relocatable; nothing refers back to the source or build folder):
#   bin/gdrbench
#   share/gdrbench/gdranalysis/      found by gdrbench relative to its own path
#   share/gdrbench/jobs/             job scripts and sbatch templates
#   share/gdrbench/tests/            check_install.sh: a site's check of its install
#   share/modulefiles/gdrbench/VER   environment module (Tcl: Environment Modules and Lmod)
#   share/doc/gdrbench/              the READMEs; results/README.md is the schema
include(GNUInstallDirs)
# cmake --install and cpack install only what is built (build first: jobs/build.sh),
# rather than building every target, the whole test suite included, on the way.
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

# The build tree's binary finds the analysis package the same way the installed
# one does: BUILD/share/gdrbench/gdranalysis, here a link to the source.
file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/share/gdrbench)
file(CREATE_LINK ${CMAKE_SOURCE_DIR}/results/gdranalysis
     ${CMAKE_BINARY_DIR}/share/gdrbench/gdranalysis SYMBOLIC)

# The analysis package (pip: results/gdranalysis/pyproject.toml) carries
# gdrbench's version: refuse to configure when the two drift apart.
file(STRINGS ${CMAKE_SOURCE_DIR}/results/gdranalysis/__init__.py _gdr_py_version
     REGEX "^__version__ = ")
string(REGEX REPLACE "^__version__ = \"([^\"]*)\".*" "\\1" _gdr_py_version "${_gdr_py_version}")
if(NOT _gdr_py_version STREQUAL PROJECT_VERSION)
  message(FATAL_ERROR "results/gdranalysis/__init__.py says __version__ = \"${_gdr_py_version}\", "
                      "CMakeLists.txt project() says ${PROJECT_VERSION}: make them equal")
endif()

install(TARGETS gdrbench RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY results/gdranalysis DESTINATION ${CMAKE_INSTALL_DATADIR}/gdrbench
        PATTERN __pycache__ EXCLUDE PATTERN "*.pyc" EXCLUDE)
install(DIRECTORY jobs DESTINATION ${CMAKE_INSTALL_DATADIR}/gdrbench USE_SOURCE_PERMISSIONS
        PATTERN __pycache__ EXCLUDE)
install(PROGRAMS tests/install/check_install.sh DESTINATION ${CMAKE_INSTALL_DATADIR}/gdrbench/tests)
install(FILES README.md DESTINATION ${CMAKE_INSTALL_DOCDIR})
install(FILES jobs/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME jobs.md)
install(FILES results/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME schema-and-analysis.md)
install(FILES src/doctor/README.md DESTINATION ${CMAKE_INSTALL_DOCDIR} RENAME doctor.md)
configure_file(cmake/gdrbench.modulefile.in ${CMAKE_BINARY_DIR}/modulefile/${PROJECT_VERSION} @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/modulefile/${PROJECT_VERSION}
        DESTINATION ${CMAKE_INSTALL_DATADIR}/modulefiles/gdrbench)

# Debian package: cpack -G DEB (in the build folder). Libraries the binary links
# come from dpkg-shlibdeps; the rest are what it runs: mpirun, the Python
# analysis stack (jobs/deps/debian-analysis.txt), the RDMA providers.
set(CPACK_PACKAGE_NAME gdrbench)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_CONTACT "gdrbench maintainers <gdrbench@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "GPU cluster communication microbenchmark (GPUDirect RDMA, UCX, verbs, MPI)")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_RELEASE 1)
set(CPACK_DEBIAN_PACKAGE_SECTION science)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "openmpi-bin, python3, python3-h5py, python3-numpy, python3-scipy, python3-matplotlib, python3-pandas")
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "ibverbs-providers, rdma-core, hdf5-tools, environment-modules | lmod")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "${CPACK_PACKAGE_DESCRIPTION_SUMMARY}
 CUDA is loaded at run time (static CUDA runtime; libcuda.so.1 and NCCL come from
 the NVIDIA driver and NCCL packages where there is a GPU). Built from commit ${GDR_GIT_COMMIT}.")
include(CPack)
