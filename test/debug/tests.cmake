# The hidden `sriov-agent debug` command's contract (used by the VM-lab scenarios).
add_test(NAME integration/debug-cli
         COMMAND bash ${CMAKE_SOURCE_DIR}/test/debug/test-debug-cli.sh ${SRIOV_TEST_AGENT})
set_tests_properties(integration/debug-cli PROPERTIES LABELS integration TIMEOUT 60)
