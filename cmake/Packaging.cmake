# `cpack -G DEB` in a build tree makes slurm-elastic_<version>_<arch>.deb.
#
# The package installs under CMAKE_INSTALL_PREFIX (the path the plugin has
# compiled in for elasticrun), so configure with -DCMAKE_INSTALL_PREFIX=/usr for
# a package that lives in /usr. The plugin goes to Slurm's PluginDir
# (ELASTIC_SLURM_PLUGIN_DIR) and the plugstack snippet to
# /etc/slurm/plugstack.conf.d, both absolute.
#
# Dependencies: the shared libraries, found by dpkg-shlibdeps; and Slurm pinned
# to the major.minor the plugin was built against, because Slurm refuses a
# plugin of another version ("Incompatible plugin version"). The plugin uses
# libslurm's functions from the process that loads it (srun, slurmstepd), so
# shlibdeps cannot see that dependency: it is written here.

# cpack packages what the build tree holds: `cmake --build` first. (Without
# this, cpack's preinstall step would build every target, tests included.)
set(CMAKE_SKIP_INSTALL_ALL_DEPENDENCY ON)

set(CPACK_PACKAGE_NAME "slurm-elastic")
set(CPACK_PACKAGE_VERSION "${PROJECT_VERSION}")
set(CPACK_PACKAGE_VENDOR "slurm-elastic")
set(CPACK_PACKAGE_CONTACT "slurm-elastic maintainers <root@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "Elastic, fault-tolerant PyTorch launching for Slurm (srun --elastic, elasticrun)")
set(CPACK_PACKAGE_DESCRIPTION
    "elasticrun is a torchrun-compatible per-node agent written in C++ (one worker per GPU, \
rendezvous, restarts, hwloc binding). spank_elastic.so adds srun/sbatch/salloc --elastic \
options that run a step under elasticrun with every setting derived from Slurm. \
Built for Slurm ${ELASTIC_SLURM_VERSION}.")
set(CPACK_PACKAGING_INSTALL_PREFIX "${CMAKE_INSTALL_PREFIX}")
set(CPACK_STRIP_FILES OFF)

set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION "admin")
set(CPACK_DEBIAN_PACKAGE_PRIORITY "optional")
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "python3-torch, munge")

# ELASTIC_DEB_SLURM_PACKAGE comes from cmake/Version.cmake.
set(ELASTIC_DEB_DEPENDS "")
if(TARGET spank_elastic AND ELASTIC_SLURM_MAJOR)
  # 22.05 -> (>= 22.05), (<< 22.06): every 22.05.x, nothing else.
  math(EXPR _next_minor "${ELASTIC_SLURM_MINOR} + 1")
  if(_next_minor LESS 10)
    set(_next_minor "0${_next_minor}")
  endif()
  set(_mm "${ELASTIC_SLURM_MAJOR}.${ELASTIC_SLURM_MINOR}")
  set(ELASTIC_DEB_DEPENDS
      "${ELASTIC_DEB_SLURM_PACKAGE} (>= ${_mm}), ${ELASTIC_DEB_SLURM_PACKAGE} (<< ${ELASTIC_SLURM_MAJOR}.${_next_minor})")
endif()
# libcrypto is dlopen()ed (token authentication), so dpkg-shlibdeps does not
# see it: depend on the package that holds it (libssl3 on Debian 12).
set(_crypto_pkg "libssl3")
find_program(ELASTIC_DPKG_QUERY dpkg-query)
if(ELASTIC_DPKG_QUERY AND ELASTIC_LIBCRYPTO_FILE)
  execute_process(COMMAND ${ELASTIC_DPKG_QUERY} -S ${ELASTIC_LIBCRYPTO_FILE}
                  OUTPUT_VARIABLE _owner ERROR_QUIET RESULT_VARIABLE _rc)
  if(_rc EQUAL 0 AND _owner MATCHES "^([^:, ]+)")
    set(_crypto_pkg "${CMAKE_MATCH_1}")
  endif()
endif()
if(ELASTIC_DEB_DEPENDS)
  string(APPEND ELASTIC_DEB_DEPENDS ", ")
endif()
string(APPEND ELASTIC_DEB_DEPENDS "${_crypto_pkg}")
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${ELASTIC_DEB_DEPENDS}")

set(CPACK_GENERATOR "DEB")
set(CPACK_SOURCE_GENERATOR "TGZ")
set(CPACK_SOURCE_IGNORE_FILES "/\\\\.git/" "/build[^/]*/" "/\\\\.ci/cache/")
include(CPack)
