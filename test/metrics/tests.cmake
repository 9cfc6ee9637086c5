# The metrics endpoint end to end: the agent with the grpc-go fake kubelet on a generated
# sysfs tree, its output checked by promtool and scraped by a real Prometheus server, and
# hostile clients (`ctest -R integration/metrics`). Debian's `prometheus` package gives both
# programs (scripts/install-deps); without them a failing test names the package.
find_program(METRICS_PROMTOOL promtool)
find_program(METRICS_PROMETHEUS prometheus)
if(TARGET fake-kubelet AND Python3_Interpreter_FOUND AND METRICS_PROMTOOL AND METRICS_PROMETHEUS)
    add_test(NAME integration/metrics
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/metrics/run-metrics-tests.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py
                     --promtool ${METRICS_PROMTOOL} --prometheus ${METRICS_PROMETHEUS})
    set_tests_properties(integration/metrics PROPERTIES
        LABELS "integration;metrics" TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
else()
    add_test(NAME integration/metrics
             COMMAND sh -c "echo 'needs the fake kubelet and promtool/prometheus (Debian package prometheus; scripts/install-deps)' >&2; exit 1")
    set_tests_properties(integration/metrics PROPERTIES LABELS integration)
endif()
