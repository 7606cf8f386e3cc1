# libFuzzer target for the store's frame parser. Built natively when the
# compiler is clang (or with -DELASTIC_FUZZ=ON); otherwise, when clang++ is
# installed, compiled by a custom command with clang++ so that the short fuzz
# run below also works from the normal gcc build. The parser depends only on
# the standard library, so two source files are all it takes.
set(_fuzz_dir ${CMAKE_CURRENT_LIST_DIR})
set(_fuzz_srcs ${_fuzz_dir}/store_parser_fuzz.cc ${_fuzz_dir}/../store_protocol.cc)
set(_fuzz_flags -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
    -I${PROJECT_SOURCE_DIR})
if(CMAKE_CXX_COMPILER_ID MATCHES "Clang")
  add_executable(store_parser_fuzz ${_fuzz_srcs})
  target_compile_options(store_parser_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(store_parser_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_include_directories(store_parser_fuzz PRIVATE ${PROJECT_SOURCE_DIR})
  set(_fuzz_bin $<TARGET_FILE:store_parser_fuzz>)
else()
  find_program(ELASTIC_CLANGXX NAMES clang++ clang++-14)
  if(ELASTIC_FUZZ AND NOT ELASTIC_CLANGXX)
    message(FATAL_ERROR "ELASTIC_FUZZ=ON needs clang++ (apt-get install clang libclang-rt-14-dev)")
  endif()
  if(ELASTIC_CLANGXX)
    set(_fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/store_parser_fuzz)
    add_custom_command(OUTPUT ${_fuzz_bin}
      COMMAND ${ELASTIC_CLANGXX} ${_fuzz_flags} ${_fuzz_srcs} -o ${_fuzz_bin}
      DEPENDS ${_fuzz_srcs} ${_fuzz_dir}/../store_protocol.h
      COMMENT "Building the store parser fuzz target with clang++")
    add_custom_target(store_parser_fuzz ALL DEPENDS ${_fuzz_bin})
  else()
    message(STATUS "clang++ not found: the store parser fuzz target is not built")
  endif()
endif()
if(DEFINED _fuzz_bin)
  # A short, deterministic run (-runs, -seed) over the committed seed corpus;
  # new inputs go to the build tree, never into the source tree.
  # store/fuzz/store_fuzz.sh runs it for longer.
  add_test(NAME store_parser_fuzz_short
    COMMAND sh -c "mkdir -p fuzz-work && exec \"$0\" -seed=1 -runs=200000 -max_len=512 fuzz-work \"$1\""
            ${_fuzz_bin} ${_fuzz_dir}/store_corpus
    WORKING_DIRECTORY ${CMAKE_CURRENT_BINARY_DIR})
  set_tests_properties(store_parser_fuzz_short PROPERTIES LABELS unit TIMEOUT 300)
endif()
