# The standalone daemon (`sriov-agent run --policy-dir`) end to end on a generated node, with
# the grpc-go fake kubelet (built by test/deviceplugin/tests.cmake) as its peer.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME integration/agent-standalone
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-agent-tests.py
                 --agent $<TARGET_FILE:sriov-agent> --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                 --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
set_tests_properties(integration/agent-standalone PROPERTIES LABELS integration TIMEOUT 300
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
