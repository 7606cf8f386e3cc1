# libFuzzer targets of the store: its frame parser (store_parser_fuzz) and
# the server as a whole (store_server_fuzz: frames through real loopback
# connections, StoreServer and StoreState). Built natively when the compiler
# is clang (or with -DELASTIC_FUZZ=ON); otherwise, when clang++ is installed,
# compiled by a custom command with clang++ straight from the sources, so that
# the short fuzz runs below also work from the normal gcc build.
set(_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
set(_fuzz_flags -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -I${PROJECT_SOURCE_DIR})
if(NOT CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  find_program(ELASTIC_CLANGXX NAMES clang++ clang++-14)
  if(ELASTIC_FUZZ AND NOT ELASTIC_CLANGXX)
    message(FATAL_ERROR "ELASTIC_FUZZ=ON needs clang++ (apt-get install clang libclang-rt-14-dev)")
  endif()
  if(NOT ELASTIC_CLANGXX)
    message(STATUS "clang++ not found: the store's fuzz targets are not built")
    return()
  endif()
endif()

# elastic_store_fuzz(<name> <runs> <max_len> <corpus dir> <sources...>): the
# target <name> and its test <name>_short, a short deterministic run (-runs,
# -seed) over the committed seed corpus; new inputs go to the build tree,
# never into the source tree. store/fuzz/store_fuzz.sh runs them for longer.
function(elastic_store_fuzz name runs max_len corpus)
  set(_srcs ${ARGN})
  if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
    add_executable(${name} ${_srcs})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_link_options(${name} PRIVATE -fsanitize=fuzzer,address,undefined)
    target_include_directories(${name} PRIVATE ${PROJECT_SOURCE_DIR})
    target_link_libraries(${name} PRIVATE fmt::fmt)
    set(_bin $<TARGET_FILE:${name}>)
  else()
    set(_bin ${CMAKE_CURRENT_BINARY_DIR}/${name})
    set(_deps ${_srcs})
    foreach(_s ${_srcs})
      get_filename_component(_d ${_s} DIRECTORY)
      file(GLOB _h ${_d}/*.h)
      list(APPEND _deps ${_h})
    endforeach()
    list(REMOVE_DUPLICATES _deps)
    add_custom_command(OUTPUT ${_bin}
      COMMAND ${ELASTIC_CLANGXX} ${_fuzz_flags} ${_srcs} -lfmt -o ${_bin}
      DEPENDS ${_deps}
      COMMENT "Building the store fuzz target ${name} with clang++")
    add_custom_target(${name} ALL DEPENDS ${_bin})
  endif()
  add_test(NAME ${name}_short
    COMMAND sh -c "mkdir -p work-${name} && exec \"$0\" -seed=1 -runs=${runs} -max_len=${max_len} work-${name} \"$1\""
            ${_bin} ${corpus}
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(${name}_short PROPERTIES LABELS unit TIMEOUT 300)
endfunction()

# The parser depends only on the standard library.
elastic_store_fuzz(store_parser_fuzz 200000 512 ${_fuzz_dir}/store_corpus
  ${_fuzz_dir}/store_parser_fuzz.cc ${_fuzz_dir}/../store_protocol.cc)
# The server: the store library and what it takes from common/.
# Its log is quiet_log.cc: a new server per run would print thousands of lines.
elastic_store_fuzz(store_server_fuzz 1500 1024 ${_fuzz_dir}/store_server_corpus
  ${_fuzz_dir}/store_server_fuzz.cc ${_fuzz_dir}/quiet_log.cc
  ${_fuzz_dir}/../store_server.cc ${_fuzz_dir}/../store_state.cc ${_fuzz_dir}/../store_protocol.cc
  ${_fuzz_dir}/../store_net.cc
  ${PROJECT_SOURCE_DIR}/common/event_loop.cc ${PROJECT_SOURCE_DIR}/common/clock.cc
  ${PROJECT_SOURCE_DIR}/common/log_limit.cc ${PROJECT_SOURCE_DIR}/common/log_escape.cc
  ${PROJECT_SOURCE_DIR}/common/net.cc ${PROJECT_SOURCE_DIR}/common/parse.cc)
