# The elastic-store program with raw frames (label process: also runs in the
# sanitizer build), and real PyTorch 1.13 clients against it (label torch).
add_test(NAME store_process_test COMMAND ${ELASTIC_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/store_process_test.py)
set_tests_properties(store_process_test PROPERTIES LABELS process TIMEOUT 300
  ENVIRONMENT "ELASTIC_STORE_BIN=$<TARGET_FILE:elastic-store>")
foreach(t store_torch_test store_gloo_test)
  add_test(NAME ${t} COMMAND ${ELASTIC_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/${t}.py)
  set_tests_properties(${t} PROPERTIES LABELS torch TIMEOUT 300
    ENVIRONMENT "ELASTIC_STORE_BIN=$<TARGET_FILE:elastic-store>")
endforeach()
