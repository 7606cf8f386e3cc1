# Install rules for what an admin installs (included after every component, so
# each rule is guarded: a component that is not built is simply not installed).
#
#   bin/elasticrun                              (launcher/CMakeLists.txt)
#   <Slurm PluginDir>/spank_elastic.so          ELASTIC_SLURM_PLUGIN_DIR
#   /etc/slurm/plugstack.conf.d/elastic.conf.example   not enabled: the admin copies it
#   share/doc/slurm-elastic/                    README, user/admin/design guides, cli_filter.lua example
#   share/man/man1/elasticrun.1                 help2man from `elasticrun --help`
#   share/man/man8/spank_elastic.8

# ELASTIC_SLURM_PLUGIN_DIR and ELASTIC_SLURM_SYSCONFDIR come from cmake/Version.cmake.
set(ELASTIC_DOCDIR "${CMAKE_INSTALL_DATADIR}/doc/slurm-elastic")
set(ELASTIC_INSTALLED_LAUNCHER "${CMAKE_INSTALL_FULL_BINDIR}/elasticrun")

if(TARGET spank_elastic)
  install(TARGETS spank_elastic LIBRARY DESTINATION "${ELASTIC_SLURM_PLUGIN_DIR}")
endif()

# The plugstack.conf.d snippet: installed as .example (Debian's plugstack.conf
# includes plugstack.conf.d/*.conf only), so installing the package never
# changes what srun does; `cp elastic.conf.example elastic.conf` enables it.
configure_file(${PROJECT_SOURCE_DIR}/packaging/plugstack/elastic.conf.in
               ${PROJECT_BINARY_DIR}/packaging/elastic.conf.example @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/elastic.conf.example
        DESTINATION "${ELASTIC_SLURM_SYSCONFDIR}/plugstack.conf.d")

install(FILES ${PROJECT_SOURCE_DIR}/packaging/cli_filter/cli_filter.lua
        DESTINATION "${ELASTIC_DOCDIR}/examples")
foreach(_doc README.md docs/user.md docs/admin.md docs/design.md docs/elasticrun.md
             docs/benchmarks.md docs/benchmarks.svg)
  if(EXISTS ${PROJECT_SOURCE_DIR}/${_doc})
    install(FILES ${PROJECT_SOURCE_DIR}/${_doc} DESTINATION "${ELASTIC_DOCDIR}")
  endif()
endforeach()

# Man pages. spank_elastic(8) is written by hand (packaging/man); elasticrun(1)
# is generated from `elasticrun --help` so it can never differ from it.
string(TIMESTAMP ELASTIC_MAN_DATE "%Y-%m-%d" UTC)
configure_file(${PROJECT_SOURCE_DIR}/packaging/man/spank_elastic.8.in
               ${PROJECT_BINARY_DIR}/packaging/spank_elastic.8 @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/packaging/spank_elastic.8
        DESTINATION "${CMAKE_INSTALL_MANDIR}/man8")

find_program(ELASTIC_HELP2MAN help2man)
if(TARGET elasticrun AND ELASTIC_HELP2MAN)
  set(_man1 ${PROJECT_BINARY_DIR}/packaging/elasticrun.1)
  add_custom_command(OUTPUT ${_man1}
    # detect_leaks=0: in a sanitizer build a leak report must not end up in the page.
    COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
            ${ELASTIC_HELP2MAN} --no-info
            --name "elastic, fault-tolerant PyTorch launcher (torchrun-compatible)"
            --section 1 --source "slurm-elastic ${PROJECT_VERSION}"
            --include ${PROJECT_SOURCE_DIR}/packaging/man/elasticrun.h2m
            --output ${_man1} $<TARGET_FILE:elasticrun>
    DEPENDS elasticrun ${PROJECT_SOURCE_DIR}/packaging/man/elasticrun.h2m
    COMMENT "Generating elasticrun.1 from elasticrun --help"
    VERBATIM)
  add_custom_target(elastic_man ALL DEPENDS ${_man1})
  install(FILES ${_man1} DESTINATION "${CMAKE_INSTALL_MANDIR}/man1")
elseif(TARGET elasticrun)
  message(STATUS "help2man not found: elasticrun(1) is not generated (apt-get install help2man)")
endif()
