# Python tests by discovery: one ctest test per unittest method, found at
# configure time by tests/python_tests.py (it imports the file as
# `python3 -m unittest` does, so inherited and mixed-in tests are found too).
# Editing any .py file beside a registered test file configures again, so a
# new test method is registered by the next build. The unit test
# tests.every_test_is_run fails when a test file or test method is run by no
# suite (tests/python_tests.py check).
#
# elastic_add_python_tests(FILE <test_x.py> PREFIX <ctest prefix> LABEL <label>
#                          [CLASS_LABELS <Class>=<label>...] [TIMEOUT <s>]
#                          [ENVIRONMENT <k=v>...])
#   registers <PREFIX>.<Class>.<method> for each test of FILE, run as
#   `python3 -m unittest -v <module>.<Class>.<method>` in FILE's folder, with
#   LABEL (or the class's label from CLASS_LABELS), TIMEOUT (default 300) and
#   ENVIRONMENT (PYTHONDONTWRITEBYTECODE=1 is always set).
#
# Files whose tests share one expensive fixture (the cluster suites: one Slurm
# cluster per file and cluster.main()'s second chance) are registered whole
# with add_test()/elastic_add_cluster_test() instead; the check counts a file
# run by `python3 FILE` as running all its tests.
set(ELASTIC_PYTHON_TESTS_PY ${CMAKE_CURRENT_LIST_DIR}/../tests/python_tests.py)
cmake_path(NORMAL_PATH ELASTIC_PYTHON_TESTS_PY)

function(elastic_add_python_tests)
  cmake_parse_arguments(ARG "" "FILE;PREFIX;LABEL;TIMEOUT" "CLASS_LABELS;ENVIRONMENT" ${ARGN})
  foreach(required FILE PREFIX LABEL)
    if(NOT ARG_${required})
      message(FATAL_ERROR "elastic_add_python_tests: ${required} is missing")
    endif()
  endforeach()
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  get_filename_component(_file ${ARG_FILE} ABSOLUTE)
  get_filename_component(_dir ${_file} DIRECTORY)
  get_filename_component(_module ${_file} NAME_WE)

  # The listing depends on every module the file may import from its folder.
  file(GLOB _py ${_dir}/*.py)
  set_property(DIRECTORY APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_py} ${ELASTIC_PYTHON_TESTS_PY})
  set(_key "")
  foreach(_f ${_py} ${ELASTIC_PYTHON_TESTS_PY})
    file(MD5 ${_f} _sum)
    string(APPEND _key ${_sum})
  endforeach()
  string(MD5 _key "${_key}")
  string(MAKE_C_IDENTIFIER "${_file}" _var)
  if(DEFINED ELASTIC_PYTEST_KEY_${_var} AND ELASTIC_PYTEST_KEY_${_var} STREQUAL _key)
    set(_ids "${ELASTIC_PYTEST_IDS_${_var}}")   # nothing changed since the last listing
  else()
    execute_process(
      COMMAND ${CMAKE_COMMAND} -E env PYTHONDONTWRITEBYTECODE=1
              ${ELASTIC_TEST_PYTHON} -B ${ELASTIC_PYTHON_TESTS_PY} list ${_file}
      RESULT_VARIABLE _rc OUTPUT_VARIABLE _out ERROR_VARIABLE _err)
    if(NOT _rc EQUAL 0)
      message(FATAL_ERROR "cannot list the tests of ${_file}:\n${_err}")
    endif()
    string(STRIP "${_out}" _out)
    string(REPLACE "\n" ";" _ids "${_out}")
    if(NOT _ids)
      message(FATAL_ERROR "${_file} defines no test (tests/python_tests.py list found none)")
    endif()
    set(ELASTIC_PYTEST_KEY_${_var} "${_key}" CACHE INTERNAL "")
    set(ELASTIC_PYTEST_IDS_${_var} "${_ids}" CACHE INTERNAL "")
  endif()

  set(_env PYTHONDONTWRITEBYTECODE=1 ${ARG_ENVIRONMENT})
  if(ELASTIC_SANITIZE)
    list(APPEND _env ELASTIC_SANITIZED=1)  # the programs under test are ASan/UBSan builds
  endif()
  foreach(_id ${_ids})
    string(REGEX REPLACE "\\..*" "" _class "${_id}")
    set(_label ${ARG_LABEL})
    foreach(_cl ${ARG_CLASS_LABELS})
      if(_cl MATCHES "^${_class}=(.+)$")
        set(_label ${CMAKE_MATCH_1})
      endif()
    endforeach()
    add_test(NAME ${ARG_PREFIX}.${_id}
             COMMAND ${ELASTIC_TEST_PYTHON} -m unittest -v ${_module}.${_id}
             WORKING_DIRECTORY ${_dir})
    set_tests_properties(${ARG_PREFIX}.${_id} PROPERTIES
      LABELS ${_label} TIMEOUT ${ARG_TIMEOUT} ENVIRONMENT "${_env}")
  endforeach()
endfunction()
