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
#   ELASTIC_SLURM_VERSION, ELASTIC_SLURM_MAJOR, ELASTIC_SLURM_MINOR,
#   ELASTIC_SLURM_PLUGIN_DIR, ELASTIC_SLURM_SYSCONFDIR, ELASTIC_DEB_SLURM_PACKAGE
# (set here, before the components, so tests can use them too).

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

# Slurm's PluginDir: where the installed Slurm keeps its own plugins. Debian puts
# them in <libdir>/slurm-wlm (beside libslurmfull.so), upstream's default is
# <libdir>/slurm. A plugin elsewhere needs a full path in plugstack.conf.
set(_elastic_plugin_dir_guess "")
if(SLURM_LIBRARY)
  get_filename_component(_elastic_slurm_libdir "${SLURM_LIBRARY}" DIRECTORY)
  foreach(_candidate slurm-wlm slurm)
    if(EXISTS "${_elastic_slurm_libdir}/${_candidate}/libslurmfull.so"
       OR EXISTS "${_elastic_slurm_libdir}/${_candidate}/auth_munge.so")
      set(_elastic_plugin_dir_guess "${_elastic_slurm_libdir}/${_candidate}")
      break()
    endif()
  endforeach()
endif()
if(NOT _elastic_plugin_dir_guess)
  set(_elastic_plugin_dir_guess "${CMAKE_INSTALL_FULL_LIBDIR}/slurm")
endif()
set(ELASTIC_SLURM_PLUGIN_DIR "${_elastic_plugin_dir_guess}" CACHE PATH
    "Where spank_elastic.so is installed: Slurm's PluginDir (detected from the installed Slurm)")
set(ELASTIC_SLURM_SYSCONFDIR "/etc/slurm" CACHE PATH
    "Slurm's configuration directory (plugstack.conf.d/ lives there)")
# The Debian package that holds Slurm's PluginDir (slurm-wlm-basic-plugins on
# Debian 12); any package built from Slurm's source has Slurm's version.
set(ELASTIC_DEB_SLURM_PACKAGE "" CACHE STRING
    "Debian package the plugin's Slurm dependency is pinned on (default: owner of ELASTIC_SLURM_PLUGIN_DIR)")
if(NOT ELASTIC_DEB_SLURM_PACKAGE)
  find_program(ELASTIC_DPKG_QUERY dpkg-query)
  if(ELASTIC_DPKG_QUERY AND ELASTIC_SLURM_PLUGIN_DIR)
    execute_process(COMMAND ${ELASTIC_DPKG_QUERY} -S ${ELASTIC_SLURM_PLUGIN_DIR}
                    OUTPUT_VARIABLE _owner ERROR_QUIET RESULT_VARIABLE _rc
                    OUTPUT_STRIP_TRAILING_WHITESPACE)
    # "slurm-elastic, slurm-wlm-basic-plugins: /usr/lib/.../slurm-wlm" when an
    # earlier slurm-elastic is installed: take the first owner that is Slurm's.
    if(_rc EQUAL 0 AND _owner MATCHES "^([^:]+):")
      string(REPLACE "," ";" _owners "${CMAKE_MATCH_1}")
      foreach(_o IN LISTS _owners)
        string(STRIP "${_o}" _o)
        if(NOT _o STREQUAL "slurm-elastic" AND NOT ELASTIC_DEB_SLURM_PACKAGE)
          set(ELASTIC_DEB_SLURM_PACKAGE "${_o}")
        endif()
      endforeach()
    endif()
  endif()
endif()
if(NOT ELASTIC_DEB_SLURM_PACKAGE)
  set(ELASTIC_DEB_SLURM_PACKAGE "slurm-wlm-basic-plugins")
endif()

message(STATUS "slurm-elastic ${PROJECT_VERSION}, built for Slurm ${ELASTIC_SLURM_VERSION} (plugin dir ${ELASTIC_SLURM_PLUGIN_DIR}, Debian package ${ELASTIC_DEB_SLURM_PACKAGE})")

set(ELASTIC_GENERATED_DIR ${PROJECT_BINARY_DIR}/generated)
configure_file(${PROJECT_SOURCE_DIR}/cmake/elastic_version.h.in
               ${ELASTIC_GENERATED_DIR}/elastic_version.h @ONLY)
add_library(elastic_version INTERFACE)
target_include_directories(elastic_version INTERFACE ${ELASTIC_GENERATED_DIR})
