# The elastic rendezvous: the host's state machine, the agent<->host protocol,
# authentication, and the RendezvousHandler implementations (host and client).
find_package(OpenSSL REQUIRED)  # libssl-dev: HMAC-SHA256 for token authentication

# On top of elastic_store (store.cmake): the agent store, and the socket helpers (net.h).
add_library(elastic_rendezvous STATIC
  rendezvous_settings.cc rendezvous_state.cc frame.cc messages.cc connection.cc auth.cc
  rendezvous_host.cc rendezvous_client.cc c10d_rendezvous.cc)
target_link_libraries(elastic_rendezvous PUBLIC elastic_store)
target_include_directories(elastic_rendezvous PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(elastic_rendezvous PUBLIC elastic_common nlohmann_json::nlohmann_json fmt::fmt
                      PRIVATE ${CMAKE_DL_LIBS})
# libcrypto is dlopen()ed by auth.cc on first use (token authentication only):
# its headers here, its soname for dlopen (libcrypto.so.3 for OpenSSL 3).
target_include_directories(elastic_rendezvous PRIVATE ${OPENSSL_INCLUDE_DIR})
if(OPENSSL_VERSION VERSION_GREATER_EQUAL 3)
  string(REGEX MATCH "^[0-9]+" _crypto_so "${OPENSSL_VERSION}")
else()
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _crypto_so "${OPENSSL_VERSION}")
endif()
if(NOT _crypto_so)
  message(FATAL_ERROR "cannot tell libcrypto's soname from OpenSSL version '${OPENSSL_VERSION}'")
endif()
set(ELASTIC_LIBCRYPTO_SONAME "libcrypto.so.${_crypto_so}" CACHE INTERNAL "")
get_filename_component(_crypto_real "${OPENSSL_CRYPTO_LIBRARY}" REALPATH)
set(ELASTIC_LIBCRYPTO_FILE "${_crypto_real}" CACHE INTERNAL "")  # cmake/Packaging.cmake
target_compile_definitions(elastic_rendezvous PRIVATE ELASTIC_LIBCRYPTO_SONAME="${ELASTIC_LIBCRYPTO_SONAME}")
if(MUNGE_FOUND)
  target_link_libraries(elastic_rendezvous PRIVATE PkgConfig::MUNGE)
  target_compile_definitions(elastic_rendezvous PRIVATE ELASTIC_HAVE_MUNGE=1)
endif()

elastic_add_unit_tests(rendezvous_tests
  rendezvous_settings_test.cc rendezvous_state_test.cc frame_test.cc messages_test.cc auth_test.cc)
target_sources(rendezvous_tests PRIVATE host_client_test.cc c10d_rendezvous_test.cc)
target_link_libraries(rendezvous_tests PRIVATE elastic_rendezvous)

# libFuzzer targets: the frame parser and message decoder (frame_fuzz), what a
# host can send an agent (client_message_fuzz) and what any peer can send the
# host (host_message_fuzz). With gcc as the main compiler they are built by
# clang++ through a custom command (as the store's), so the short fuzz runs are
# part of every build that has clang.
find_program(ELASTIC_RDZV_CLANGXX NAMES clang++ clang++-14)
function(elastic_rdzv_fuzz name test_name)
  set(_dir ${CMAKE_CURRENT_SOURCE_DIR})
  set(_srcs ${_dir}/${name}.cc ${_dir}/frame.cc ${_dir}/messages.cc
      ${PROJECT_SOURCE_DIR}/common/log_escape.cc)
  set(_bin ${CMAKE_CURRENT_BINARY_DIR}/rdzv_${name})
  add_custom_command(OUTPUT ${_bin}
    COMMAND ${ELASTIC_RDZV_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR} ${_srcs} -lfmt -o ${_bin}
    DEPENDS ${_srcs} ${_dir}/frame.h ${_dir}/messages.h ${_dir}/fuzz_frames.h
            ${PROJECT_SOURCE_DIR}/common/log_escape.h
    COMMENT "Building the rendezvous fuzz target ${name} with clang++")
  add_custom_target(rdzv_${name} ALL DEPENDS ${_bin})
  add_test(NAME rendezvous.${test_name} COMMAND ${_bin} -runs=20000 -max_len=4096 -seed=1)
  set_tests_properties(rendezvous.${test_name} PROPERTIES LABELS unit)
endfunction()
if(ELASTIC_RDZV_CLANGXX)
  elastic_rdzv_fuzz(frame_fuzz frame_fuzz_short)
  elastic_rdzv_fuzz(client_message_fuzz client_message_fuzz_short)
  elastic_rdzv_fuzz(host_message_fuzz host_message_fuzz_short)
endif()
