# The user documentation (README.md, docs/): links and anchors, runnable shell blocks on a
# generated sysfs tree, the configuration reference against the program's --help, no internal
# work-item numbers, the Events table against the sources' reasons, markdownlint (test/docs/check-docs.py says what each case asserts).
find_program(PYTHON3_FOR_DOCS python3 REQUIRED)
set(DOCS_CASES links runnable config events workitems)
find_program(MARKDOWNLINT_FOR_DOCS markdownlint
             HINTS $ENV{SRIOV_TOOLS_DIR}/bin /opt/sriov-agent-tools/bin)
if(MARKDOWNLINT_FOR_DOCS)
    list(APPEND DOCS_CASES lint)
else()
    message(STATUS "markdownlint not found (scripts/install-deps installs it): docs/lint not registered")
endif()
foreach(case ${DOCS_CASES})
    add_test(NAME docs/${case}
             COMMAND ${PYTHON3_FOR_DOCS} ${CMAKE_SOURCE_DIR}/test/docs/check-docs.py
                     ${case} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
    set_tests_properties(docs/${case} PROPERTIES LABELS docs TIMEOUT 180
                         ENVIRONMENT "MARKDOWNLINT=${MARKDOWNLINT_FOR_DOCS}")
endforeach()
