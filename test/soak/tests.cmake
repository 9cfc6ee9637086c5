# Fault soak: the cluster-mode daemon under random API faults, kubelet restarts, policy churn
# and kill -9 restarts (test/soak/run-soak.py). CI runs 120 s of faults; run it longer by hand
# with --seconds (see docs/testing.md "Fault soak").
find_package(Python3 REQUIRED COMPONENTS Interpreter)
find_program(KUBECTL kubectl)
# Two tests that run side by side, each well under the 5 minutes a test may take: the fault
# phase with its settle checks (hostile rounds off), and the hostile rounds after a short fault
# phase. `--seconds 120` with both switches on (the default) is the same run as one.
set(SOAK_RUNS "soak\;120\;SOAK_POISON=0\;SOAK_KUBELET_DOWN=0" "soak-hostile\;10\;SOAK_POISON=1\;SOAK_KUBELET_DOWN=1")
foreach(run ${SOAK_RUNS})
    list(GET run 0 name)
    list(GET run 1 seconds)
    list(GET run 2 poison)
    list(GET run 3 kubelet_down)
    if(KUBECTL)
        add_test(NAME integration/${name}
                 COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/soak/run-soak.py
                         --agent ${SRIOV_TEST_AGENT}
                         --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${KUBECTL}
                         --seconds ${seconds})
    else()
        add_test(NAME integration/${name}
                 COMMAND sh -c "echo 'kubectl not found on PATH: the soak needs it' >&2; exit 1")
    endif()
    set_tests_properties(integration/${name} PROPERTIES LABELS "soak;integration" TIMEOUT 300
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR};${poison};${kubelet_down}")
endforeach()
