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

# libFuzzer target of the frame parser and message decoder. With gcc as the main
# compiler it is built by clang++ through a custom command (as the store's), so
# the short fuzz run is part of every build that has clang.
set(_rdzv_fuzz_srcs ${CMAKE_CURRENT_SOURCE_DIR}/frame_fuzz.cc ${CMAKE_CURRENT_SOURCE_DIR}/frame.cc
    ${CMAKE_CURRENT_SOURCE_DIR}/messages.cc)
find_program(ELASTIC_RDZV_CLANGXX NAMES clang++ clang++-14)
if(ELASTIC_RDZV_CLANGXX)
  set(_rdzv_fuzz_bin ${CMAKE_CURRENT_BINARY_DIR}/rdzv_frame_fuzz)
  add_custom_command(OUTPUT ${_rdzv_fuzz_bin}
    COMMAND ${ELASTIC_RDZV_CLANGXX} -std=c++20 -O1 -g -fsanitize=fuzzer,address,undefined
            -fno-sanitize-recover=undefined -I${PROJECT_SOURCE_DIR} ${_rdzv_fuzz_srcs} -lfmt
            -o ${_rdzv_fuzz_bin}
    DEPENDS ${_rdzv_fuzz_srcs} ${CMAKE_CURRENT_SOURCE_DIR}/frame.h ${CMAKE_CURRENT_SOURCE_DIR}/messages.h
    COMMENT "Building the rendezvous frame fuzz target with clang++")
  add_custom_target(rdzv_frame_fuzz ALL DEPENDS ${_rdzv_fuzz_bin})
  add_test(NAME rendezvous.frame_fuzz_short
           COMMAND ${_rdzv_fuzz_bin} -runs=20000 -max_len=4096 -seed=1)
  set_tests_properties(rendezvous.frame_fuzz_short PROPERTIES LABELS unit)
endif()
