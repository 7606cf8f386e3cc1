# The TCPStore-compatible key-value store: library, server program, client,
# unit tests and the fuzz target of its frame parser.
set(_store ${CMAKE_CURRENT_LIST_DIR})
add_library(elastic_store STATIC
  ${_store}/store_protocol.cc ${_store}/store_state.cc ${_store}/net.cc ${_store}/store_net.cc
  ${_store}/store_server.cc ${_store}/store_client.cc ${_store}/store_codec.cc
  ${_store}/store_async_client.cc)
target_include_directories(elastic_store PUBLIC ${PROJECT_SOURCE_DIR})
target_link_libraries(elastic_store PUBLIC elastic_common fmt::fmt)

add_executable(elastic-store ${_store}/store_main.cc)
target_link_libraries(elastic-store PRIVATE elastic_store CLI11::CLI11)

elastic_add_unit_tests(store_tests
  ${_store}/store_protocol_test.cc ${_store}/store_state_test.cc
  ${_store}/store_server_test.cc ${_store}/store_server_limits_test.cc ${_store}/store_client_test.cc
  ${_store}/store_async_client_test.cc)
target_link_libraries(store_tests PRIVATE elastic_store)

include(${_store}/fuzz/store_fuzz.cmake OPTIONAL)
