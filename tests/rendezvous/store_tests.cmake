# Real PyTorch 1.13 clients against our store server (label torch).
foreach(t store_torch_test store_gloo_test)
  add_test(NAME ${t} COMMAND ${ELASTIC_TEST_PYTHON} ${CMAKE_CURRENT_LIST_DIR}/${t}.py)
  set_tests_properties(${t} PROPERTIES LABELS torch TIMEOUT 300
    ENVIRONMENT "ELASTIC_STORE_BIN=$<TARGET_FILE:elastic-store>")
endforeach()
