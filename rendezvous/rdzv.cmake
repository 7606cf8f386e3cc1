# The elastic rendezvous: the host's state machine, the agent<->host protocol,
# authentication, and the RendezvousHandler implementations (host and client).
find_package(OpenSSL REQUIRED)  # libssl-dev: HMAC-SHA256 for token authentication

add_library(elastic_rendezvous STATIC
  rendezvous_settings.cc rendezvous_state.cc frame.cc messages.cc net.cc connection.cc auth.cc)
if(EXISTS ${CMAKE_CURRENT_SOURCE_DIR}/rendezvous_host.cc AND TARGET elastic_store)
  target_sources(elastic_rendezvous PRIVATE rendezvous_host.cc rendezvous_client.cc c10d_rendezvous.cc)
  target_link_libraries(elastic_rendezvous PUBLIC elastic_store)
endif()
target_include_directories(elastic_rendezvous PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(elastic_rendezvous PUBLIC elastic_common nlohmann_json::nlohmann_json fmt::fmt
                      PRIVATE OpenSSL::Crypto)
if(MUNGE_FOUND)
  target_link_libraries(elastic_rendezvous PRIVATE PkgConfig::MUNGE)
  target_compile_definitions(elastic_rendezvous PRIVATE ELASTIC_HAVE_MUNGE=1)
endif()

elastic_add_unit_tests(rendezvous_tests
  rendezvous_settings_test.cc rendezvous_state_test.cc frame_test.cc messages_test.cc auth_test.cc)
target_link_libraries(rendezvous_tests PRIVATE elastic_rendezvous)
if(TARGET elastic_store)
  target_sources(rendezvous_tests PRIVATE host_client_test.cc)
endif()

if(ELASTIC_FUZZ)
  add_executable(rdzv_frame_fuzz frame_fuzz.cc)
  target_compile_options(rdzv_frame_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_options(rdzv_frame_fuzz PRIVATE -fsanitize=fuzzer,address,undefined)
  target_link_libraries(rdzv_frame_fuzz PRIVATE elastic_rendezvous)
endif()
