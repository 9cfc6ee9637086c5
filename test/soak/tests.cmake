# Fault soak: the cluster-mode daemon under random API faults, kubelet restarts, policy churn
# and kill -9 restarts (test/soak/run-soak.py). CI runs 120 s of faults; run it longer by hand
# with --seconds (see docs/testing.md "Fault soak").
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_program(KUBECTL kubectl)
if(KUBECTL)
    add_test(NAME integration/soak
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/soak/run-soak.py
                     --agent $<TARGET_FILE:sriov-agent>
                     --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${KUBECTL}
                     --seconds 120)
else()
    add_test(NAME integration/soak
             COMMAND sh -c "echo 'kubectl not found on PATH: the soak needs it' >&2; exit 1")
endif()
set_tests_properties(integration/soak PROPERTIES LABELS "soak;integration" TIMEOUT 900
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
