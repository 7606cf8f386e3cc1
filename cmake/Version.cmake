# The version of slurm-elastic and of the Slurm this build is for, in one
# generated header, so `elasticrun --version` and the plugin's load line say
# the same thing the package says.
#
#   target_link_libraries(<target> PRIVATE elastic_version)
#   #include "elastic_version.h"
#     ELASTIC_VERSION          "0.1.0"   (unless already defined by -D)
#     ELASTIC_SLURM_VERSION    "22.05.8" ("none" without libslurm-dev)
#     ELASTIC_VERSION_LINE     "slurm-elastic 0.1.0 (built for Slurm 22.05.8)"
#
# Also sets, for Install.cmake and Packaging.cmake:
#   ELASTIC_SLURM_VERSION, ELASTIC_SLURM_MAJOR, ELASTIC_SLURM_MINOR.

set(ELASTIC_SLURM_VERSION "none")
set(ELASTIC_SLURM_MAJOR "")
set(ELASTIC_SLURM_MINOR "")
if(SLURM_INCLUDE_DIR AND EXISTS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h)
  # slurm_version.h only has the number: 0x160508 is 22.05.8.
  file(STRINGS ${SLURM_INCLUDE_DIR}/slurm/slurm_version.h _elastic_slurm_line
       REGEX "^#define[ \t]+SLURM_VERSION_NUMBER[ \t]+0x[0-9a-fA-F]+")
  if(_elastic_slurm_line MATCHES "(0x[0-9a-fA-F]+)")
    math(EXPR _n "${CMAKE_MATCH_1}")
    math(EXPR ELASTIC_SLURM_MAJOR "(${_n} >> 16) & 255")
    math(EXPR ELASTIC_SLURM_MINOR "(${_n} >> 8) & 255")
    math(EXPR _micro "${_n} & 255")
    if(ELASTIC_SLURM_MINOR LESS 10)
      set(ELASTIC_SLURM_MINOR "0${ELASTIC_SLURM_MINOR}")  # Slurm writes 22.05
    endif()
    set(ELASTIC_SLURM_VERSION "${ELASTIC_SLURM_MAJOR}.${ELASTIC_SLURM_MINOR}.${_micro}")
  endif()
endif()
message(STATUS "slurm-elastic ${PROJECT_VERSION}, built for Slurm ${ELASTIC_SLURM_VERSION}")

set(ELASTIC_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${PROJECT_SOURCE_DIR}/cmake/elastic_version.h.in
               ${ELASTIC_GENERATED_DIR}/elastic_version.h @ONLY)
add_library(elastic_version INTERFACE)
target_include_directories(elastic_version INTERFACE ${ELASTIC_GENERATED_DIR})
