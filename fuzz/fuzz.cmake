# libFuzzer targets for the parsers of outside input that are not the store's
# frame parser (store/fuzz/) and not rendezvous frames and messages
# (rendezvous/frame_fuzz.cc): those are built beside their code.
# The main build is gcc; libFuzzer needs clang, so each target is compiled by
# a custom command with clang++ straight from the sources it needs. Without
# clang++ nothing is built and no fuzz test is registered (a status message
# says so).
#
# Each target gets a short deterministic CTest run (label fuzz) over its
# committed seed corpus in fuzz/corpus/<name>/; new inputs go to the build
# tree. fuzz/run.sh runs them for longer (docs/admin.md, "Fuzzing").

# The sanitizer tree runs unit and process tests only; the fuzz targets carry
# their own sanitizers, so build them once, in the release tree.
if(ELASTIC_SANITIZE AND NOT ELASTIC_FUZZ)
  return()
endif()

find_program(ELASTIC_FUZZ_CLANGXX NAMES clang++ clang++-14)
if(NOT ELASTIC_FUZZ_CLANGXX)
  if(ELASTIC_FUZZ)
    message(FATAL_ERROR "ELASTIC_FUZZ=ON needs clang++ (apt-get install clang libclang-rt-14-dev)")
  endif()
  message(STATUS "clang++ not found: fuzz targets in fuzz/ are not built (apt-get install clang libclang-rt-14-dev)")
  return()
endif()

set(ELASTIC_FUZZ_DIR ${PROJECT_BINARY_DIR}/fuzz)
file(MAKE_DIRECTORY ${ELASTIC_FUZZ_DIR})
set(_fuzz_flags -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR} -I${ELASTIC_GENERATED_DIR}
    "-DELASTIC_VERSION=\"${PROJECT_VERSION}\"")

# elastic_add_fuzzer(<name> RUNS <n> SOURCES <project-relative sources...>
#                    [OPTIONAL_SOURCES <sources used when they exist>] [LIBS <-lfoo...>]
#                    [DEFINES <-DX=Y...>])
#   builds ${build}/fuzz/<name>_fuzz from fuzz/<name>_fuzz.cc and SOURCES,
#   and the test fuzz_<name>: <n> runs with a fixed seed over fuzz/corpus/<name>.
function(elastic_add_fuzzer name)
  cmake_parse_arguments(F "" "RUNS" "SOURCES;OPTIONAL_SOURCES;LIBS;DEFINES" ${ARGN})
  foreach(_s ${F_OPTIONAL_SOURCES})
    if(EXISTS ${PROJECT_SOURCE_DIR}/${_s})
      list(APPEND F_SOURCES ${_s})
    endif()
  endforeach()
  set(_srcs ${PROJECT_SOURCE_DIR}/fuzz/${name}_fuzz.cc)
  foreach(_s ${F_SOURCES})
    if(NOT EXISTS ${PROJECT_SOURCE_DIR}/${_s})
      message(STATUS "fuzz target ${name} skipped: ${_s} does not exist")
      return()
    endif()
    list(APPEND _srcs ${PROJECT_SOURCE_DIR}/${_s})
  endforeach()
  set(_bin ${ELASTIC_FUZZ_DIR}/${name}_fuzz)
  # Headers: every header beside a source, so an edited header rebuilds.
  set(_deps ${_srcs} ${PROJECT_SOURCE_DIR}/fuzz/fuzz_input.h)
  foreach(_s ${_srcs})
    get_filename_component(_d ${_s} DIRECTORY)
    file(GLOB _h ${_d}/*.h)
    list(APPEND _deps ${_h})
  endforeach()
  list(REMOVE_DUPLICATES _deps)
  add_custom_command(OUTPUT ${_bin}
    COMMAND ${ELASTIC_FUZZ_CLANGXX} ${_fuzz_flags} ${F_DEFINES} ${_srcs} -lfmt ${F_LIBS} -o ${_bin}
    DEPENDS ${_deps}
    COMMENT "Building fuzz target ${name}_fuzz with clang++"
    VERBATIM)
  add_custom_target(${name}_fuzz ALL DEPENDS ${_bin})
  add_test(NAME fuzz_${name}
    COMMAND sh -c "mkdir -p work-${name} && exec \"$0\" -seed=1 -runs=${F_RUNS} -max_len=2048 work-${name} \"$1\""
            ${_bin} ${PROJECT_SOURCE_DIR}/fuzz/corpus/${name}
    WORKING_DIRECTORY ${ELASTIC_FUZZ_DIR})
  set_tests_properties(fuzz_${name} PROPERTIES LABELS fuzz TIMEOUT 600)
endfunction()

elastic_add_fuzzer(parse RUNS 100000
  SOURCES common/parse.cc)
elastic_add_fuzzer(device_list RUNS 50000
  SOURCES common/device_list.cc common/parse.cc)
elastic_add_fuzzer(spank_options RUNS 50000
  SOURCES spank_plugin/options.cc common/parse.cc)
elastic_add_fuzzer(spank_task_env RUNS 50000
  SOURCES spank_plugin/options.cc spank_plugin/task_env.cc spank_plugin/slurmstepd.cc
          spank_plugin/dispatch.cc spank_plugin/srun.cc
          common/parse.cc common/log.cc common/device_list.cc)
elastic_add_fuzzer(error_file RUNS 20000
  SOURCES launcher/failure_report.cc launcher/child_process.cc common/parse.cc common/log.cc)
# CLI11 builds its whole option table per input: about 200 runs/s.
elastic_add_fuzzer(launch_config RUNS 3000
  SOURCES launcher/launch_config.cc common/parse.cc rendezvous/rendezvous_settings.cc
  OPTIONAL_SOURCES launcher/option_values.cc)
# GPU lists (CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS) on a real 16-GPU topology.
set(_fuzz_topology ${PROJECT_SOURCE_DIR}/tests/topologies/nvidiaDGX2.xml)
if(NOT EXISTS ${_fuzz_topology})
  set(_fuzz_topology "")
endif()
elastic_add_fuzzer(gpu_lists RUNS 5000
  SOURCES hwloc_binding/gpus.cc hwloc_binding/topology.cc common/parse.cc common/device_list.cc
  LIBS -lhwloc
  DEFINES "-DELASTIC_FUZZ_TOPOLOGY=\"${_fuzz_topology}\"")
