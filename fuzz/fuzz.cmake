# Every libFuzzer target of the project, built one way: a parser of outside
# input and the code it needs, compiled by a custom command with clang++ (the
# main build is gcc; libFuzzer needs clang). Without clang++ nothing is built and
# no fuzz test is registered (a status message says so).
#
# Each target gets a short deterministic unit test, fuzz_<name>, over its
# committed seed corpus; new inputs go to the build tree. fuzz/run.sh runs any
# of them for longer (docs/admin.md, "Fuzzing"), from the list this file writes
# to ${build}/fuzz/targets.txt.

# Tests only; the sanitizer tree runs unit and process tests, and the fuzz
# targets carry their own sanitizers: build them once, in the release tree.
if(NOT ELASTIC_FUZZ AND (NOT ELASTIC_BUILD_TESTS OR ELASTIC_SANITIZE))
  return()
endif()

find_program(ELASTIC_FUZZ_CLANGXX NAMES clang++ clang++-14)
if(NOT ELASTIC_FUZZ_CLANGXX)
  if(ELASTIC_FUZZ)
    message(FATAL_ERROR "ELASTIC_FUZZ=ON needs clang++ (apt-get install clang libclang-rt-14-dev)")
  endif()
  message(STATUS "clang++ not found: no fuzz targets (apt-get install clang libclang-rt-14-dev)")
  return()
endif()

set(ELASTIC_FUZZ_DIR ${PROJECT_BINARY_DIR}/fuzz)
set(ELASTIC_FUZZ_LAUNCHER ${CCACHE_PROGRAM})   # empty without ccache (cmake/Warnings.cmake)
file(MAKE_DIRECTORY ${ELASTIC_FUZZ_DIR})
file(WRITE ${ELASTIC_FUZZ_DIR}/targets.txt "# name max_len corpus (fuzz/run.sh)\n")
set(_fuzz_flags -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
    -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR} -I${ELASTIC_GENERATED_DIR}
    "-DELASTIC_VERSION=\"${PROJECT_VERSION}\"")

# elastic_add_fuzzer(<name> RUNS <n> SOURCES <project-relative sources...>
#                    [MAIN <source>] [CORPUS <dir>] [MAX_LEN <n>] [LIBS <-lfoo...>]
#                    [DEFINES <-DX=Y...>])
#   builds ${build}/fuzz/<name>_fuzz from MAIN (default fuzz/<name>_fuzz.cc) and
#   SOURCES, and the unit test fuzz_<name>: <n> runs with a fixed seed over CORPUS
#   (project-relative, default fuzz/corpus/<name>), inputs up to MAX_LEN (2048).
function(elastic_add_fuzzer name)
  cmake_parse_arguments(F "" "RUNS;MAIN;CORPUS;MAX_LEN" "SOURCES;LIBS;DEFINES" ${ARGN})
  if(NOT F_MAIN)
    set(F_MAIN fuzz/${name}_fuzz.cc)
  endif()
  if(NOT F_CORPUS)
    set(F_CORPUS fuzz/corpus/${name})
  endif()
  if(NOT F_MAX_LEN)
    set(F_MAX_LEN 2048)
  endif()
  set(_bin ${ELASTIC_FUZZ_DIR}/${name}_fuzz)
  # One object per source, compiled through ccache (a fresh clone reuses what
  # an earlier build compiled, and a source shared by several targets is
  # compiled once), then one link. Headers are tracked by the compiler's depfile.
  set(_objs)
  file(MAKE_DIRECTORY ${ELASTIC_FUZZ_DIR}/obj/${name})
  foreach(_s ${F_MAIN} ${F_SOURCES})
    string(MAKE_C_IDENTIFIER "${_s}" _o)
    set(_obj ${ELASTIC_FUZZ_DIR}/obj/${name}/${_o}.o)
    add_custom_command(OUTPUT ${_obj}
      COMMAND ${ELASTIC_FUZZ_LAUNCHER} ${ELASTIC_FUZZ_CLANGXX} ${_fuzz_flags} ${F_DEFINES}
              -MD -MF ${_obj}.d -c ${PROJECT_SOURCE_DIR}/${_s} -o ${_obj}
      DEPENDS ${PROJECT_SOURCE_DIR}/${_s}
      DEPFILE ${_obj}.d
      COMMENT "Compiling ${_s} for fuzz target ${name}_fuzz with clang++"
      VERBATIM)
    list(APPEND _objs ${_obj})
  endforeach()
  add_custom_command(OUTPUT ${_bin}
    COMMAND ${ELASTIC_FUZZ_CLANGXX} ${_fuzz_flags} ${_objs} -lfmt ${F_LIBS} -o ${_bin}
    DEPENDS ${_objs}
    COMMENT "Linking fuzz target ${name}_fuzz"
    VERBATIM)
  add_custom_target(${name}_fuzz ALL DEPENDS ${_bin})
  file(APPEND ${ELASTIC_FUZZ_DIR}/targets.txt "${name} ${F_MAX_LEN} ${F_CORPUS}\n")
  add_test(NAME fuzz_${name}
    COMMAND sh -c "mkdir -p work-${name} && exec \"$0\" -seed=1 -runs=${F_RUNS} -max_len=${F_MAX_LEN} work-${name} \"$1\""
            ${_bin} ${PROJECT_SOURCE_DIR}/${F_CORPUS}
    WORKING_DIRECTORY ${ELASTIC_FUZZ_DIR})
  # A fixed number of runs: CPU-bound, no wait. Beside the matrix's other suites (every
  # core busy, 26 runnable tasks) fuzz_launch_config ran at 5 runs/s and passed 300 s
  # after 1,609 of its 3,000 (Debian 12 in CI's setup, 2026-12-07); alone, 56-69 s.
  set_tests_properties(fuzz_${name} PROPERTIES LABELS unit TIMEOUT 1200)
endfunction()

# common/, spank_plugin/, launcher/: option values, Slurm's environment, error files.
elastic_add_fuzzer(parse RUNS 100000
  SOURCES common/parse.cc)
elastic_add_fuzzer(device_list RUNS 50000
  SOURCES common/device_list.cc common/parse.cc)
elastic_add_fuzzer(endpoint RUNS 50000
  SOURCES common/endpoint.cc common/parse.cc)
elastic_add_fuzzer(nproc_spec RUNS 20000
  SOURCES common/nproc_spec.cc common/parse.cc)
elastic_add_fuzzer(bind_mode RUNS 20000
  SOURCES common/bind_mode.cc)
elastic_add_fuzzer(node_range RUNS 20000
  SOURCES common/node_range.cc common/parse.cc)
elastic_add_fuzzer(peer_list RUNS 20000
  SOURCES common/peer_list.cc)
elastic_add_fuzzer(module_list RUNS 20000
  SOURCES common/module_list.cc)
elastic_add_fuzzer(spank_options RUNS 50000
  SOURCES spank_plugin/options.cc common/option_table.cc common/parse.cc common/endpoint.cc
          common/nproc_spec.cc common/bind_mode.cc common/node_range.cc common/module_list.cc
          common/log_escape.cc common/grow_options.cc)
# --elastic-grow's OPTIONS (common/grow_options.h).
elastic_add_fuzzer(grow_options RUNS 20000
  SOURCES common/grow_options.cc)
elastic_add_fuzzer(spank_task_env RUNS 50000
  SOURCES spank_plugin/options.cc spank_plugin/task_env.cc spank_plugin/slurmstepd.cc
          spank_plugin/dispatch.cc spank_plugin/srun.cc spank_plugin/join.cc spank_plugin/join_target.cc
          spank_plugin/step_token.cc common/option_table.cc common/parse.cc common/log.cc common/device_list.cc common/endpoint.cc
          common/nproc_spec.cc common/bind_mode.cc common/node_range.cc common/module_list.cc
          common/log_escape.cc common/grow_options.cc)
elastic_add_fuzzer(spank_join_target RUNS 50000
  SOURCES spank_plugin/join_target.cc spank_plugin/task_env.cc spank_plugin/options.cc
          common/option_table.cc common/parse.cc common/device_list.cc common/endpoint.cc
          common/nproc_spec.cc common/bind_mode.cc common/node_range.cc common/module_list.cc
          common/log_escape.cc common/grow_options.cc)
elastic_add_fuzzer(error_file RUNS 20000
  SOURCES launcher/failure_report.cc launcher/child_process.cc common/parse.cc common/log.cc
          common/log_escape.cc)
# A line of the job's event record (`elasticrun timeline` reads any file given).
elastic_add_fuzzer(job_event RUNS 20000
  SOURCES launcher/job_events.cc launcher/failure_report.cc launcher/child_process.cc rendezvous/messages.cc
          rendezvous/frame.cc common/parse.cc common/log.cc common/log_escape.cc common/endpoint.cc)
# The status view a host answers `elasticrun status` with (job_status.h).
elastic_add_fuzzer(job_status RUNS 20000
  SOURCES launcher/job_status.cc launcher/job_events.cc launcher/failure_report.cc launcher/child_process.cc
          rendezvous/messages.cc rendezvous/frame.cc common/parse.cc common/log.cc common/log_escape.cc
          common/endpoint.cc)
# /proc/PID/wchan and /proc/PID/stat, read for a worker SIGKILL cannot end.
elastic_add_fuzzer(proc_wchan RUNS 50000
  SOURCES launcher/stuck_worker.cc launcher/descendants.cc common/log_escape.cc common/log.cc
          common/event_loop.cc common/clock.cc)
# The record each other task of a node writes for task 0's agent (one task per GPU).
elastic_add_fuzzer(task_record RUNS 50000
  SOURCES launcher/task_record.cc launcher/option_values.cc common/parse.cc common/log_escape.cc)
# --progress-file's text (no_progress.h): whatever a worker or a stranger wrote there.
elastic_add_fuzzer(progress_file RUNS 50000 SOURCES launcher/no_progress.cc)
# `scontrol --oneliner show node NAME`'s answer (launcher/slurm_node_state.h).
elastic_add_fuzzer(scontrol_node RUNS 50000
  SOURCES launcher/slurm_node_state.cc common/log_escape.cc)
# `elasticrun status JOBID[.STEP]`: the argument and scontrol's job and step lines
# (launcher/status_target.h).
elastic_add_fuzzer(status_target RUNS 50000
  SOURCES launcher/status_target.cc common/parse.cc common/endpoint.cc common/log_escape.cc)
elastic_add_fuzzer(zygote_reply RUNS 50000
  SOURCES launcher/zygote_request.cc common/parse.cc common/log_escape.cc)
# Both directions of the agent <-> host runner protocol (launcher/host_runner_message.h).
elastic_add_fuzzer(host_runner_message RUNS 50000
  SOURCES launcher/host_runner_message.cc common/parse.cc common/log_escape.cc)
elastic_add_fuzzer(file_timer_request RUNS 20000
  SOURCES launcher/file_timer_request.cc common/log_escape.cc)
# CLI11 builds its whole option table per input: about 200 runs/s.
elastic_add_fuzzer(launch_config RUNS 3000
  SOURCES launcher/launch_options.cc launcher/launch_convert.cc launcher/option_values.cc launcher/native_stacks.cc launcher/slurm_stop.cc
          launcher/completion.cc launcher/duplicate_filter.cc launcher/step_gpus.cc
          common/option_table.cc common/parse.cc rendezvous/rendezvous_settings.cc
          rendezvous/token_file.cc
          common/endpoint.cc common/nproc_spec.cc common/bind_mode.cc common/device_list.cc
          common/node_range.cc common/module_list.cc common/log_escape.cc common/peer_list.cc
          common/grow_options.cc)
# The kernel's sock_diag answer: who owns a local peer's socket (the store's admission).
elastic_add_fuzzer(sock_diag RUNS 50000 MAX_LEN 512
  SOURCES common/sock_diag.cc)
# GPU lists (CUDA_VISIBLE_DEVICES, SLURM_STEP_GPUS) on a real 16-GPU topology.
elastic_add_fuzzer(gpu_lists RUNS 5000
  SOURCES hwloc_binding/gpus.cc hwloc_binding/topology.cc common/parse.cc common/device_list.cc
  LIBS -lhwloc
  DEFINES "-DELASTIC_FUZZ_TOPOLOGY=\"${PROJECT_SOURCE_DIR}/tests/topologies/nvidiaDGX2.xml\"")

# store/: the TCPStore frame parser in both dialects (it needs only the standard library).
elastic_add_fuzzer(store_parser RUNS 200000 MAX_LEN 512
  SOURCES store/store_protocol.cc)
# store/: the whole server (connections, limits, state) driven over loopback;
# about 10 ms per run, hence few runs. Its log goes to a quiet stub.
elastic_add_fuzzer(store_server RUNS 1500 MAX_LEN 1024
  SOURCES fuzz/quiet_log.cc store/store_server.cc store/store_state.cc store/store_protocol.cc
          store/store_net.cc common/event_loop.cc common/clock.cc common/log_limit.cc
          common/log_escape.cc common/net.cc common/parse.cc common/endpoint.cc)

# rendezvous/: the frame parser and message decoder, what a host can send an
# agent, and what any peer can send the host.
foreach(_target frame client_message host_message)
  elastic_add_fuzzer(rdzv_${_target} RUNS 20000 MAX_LEN 4096
    CORPUS fuzz/corpus/rdzv
    SOURCES rendezvous/frame.cc rendezvous/messages.cc common/log_escape.cc common/endpoint.cc common/parse.cc)
endforeach()
