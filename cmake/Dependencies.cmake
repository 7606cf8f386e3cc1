# Every dependency comes from Debian 12's packages (scripts/install-deps.sh).
find_package(fmt REQUIRED)            # libfmt-dev
find_package(CLI11 CONFIG REQUIRED)   # libcli11-dev
find_package(nlohmann_json REQUIRED)  # nlohmann-json3-dev
if(ELASTIC_BUILD_TESTS)
  find_package(GTest REQUIRED)        # libgtest-dev, libgmock-dev (tests only)
endif()
find_package(PkgConfig REQUIRED)
pkg_check_modules(HWLOC REQUIRED IMPORTED_TARGET hwloc)     # libhwloc-dev
pkg_check_modules(PMIX IMPORTED_TARGET pmix)                # libpmix-dev (optional)
pkg_check_modules(MUNGE IMPORTED_TARGET munge)              # libmunge-dev (optional)
# pmix.pc links pmix2/lib/libpmix.so with -Wl,-rpath to that directory; Debian
# also links libpmix.so.2 into the default library directory, so link it by name
# there when it is: no RUNPATH (the build tree's ended in an empty entry, which
# the loader reads as the current directory).
if(TARGET PkgConfig::PMIX AND EXISTS "/usr/lib/${CMAKE_LIBRARY_ARCHITECTURE}/libpmix.so")
  set_target_properties(PkgConfig::PMIX PROPERTIES INTERFACE_LINK_OPTIONS ""
                        INTERFACE_LINK_LIBRARIES "pmix")
endif()

# libslurm-dev ships no pkg-config file.
find_path(SLURM_INCLUDE_DIR slurm/spank.h)
find_library(SLURM_LIBRARY slurm)
if(SLURM_INCLUDE_DIR AND SLURM_LIBRARY)
  set(ELASTIC_HAVE_SLURM ON)
  add_library(Slurm::slurm UNKNOWN IMPORTED)
  set_target_properties(Slurm::slurm PROPERTIES
    IMPORTED_LOCATION ${SLURM_LIBRARY}
    INTERFACE_INCLUDE_DIRECTORIES ${SLURM_INCLUDE_DIR})
else()
  set(ELASTIC_HAVE_SLURM OFF)
  message(WARNING "libslurm-dev not found: the SPANK plugin is not built")
endif()

find_program(TORCH_PYTHON /usr/bin/python3)
