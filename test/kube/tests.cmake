# Kubernetes client tests against the fake API server with the real kubectl.
add_executable(kube-harness ${CMAKE_CURRENT_LIST_DIR}/kube-harness.c)
target_link_libraries(kube-harness PRIVATE sriov)

find_program(KUBECTL kubectl)
find_package(Python3 COMPONENTS Interpreter)
if(KUBECTL AND Python3_FOUND)
    foreach(case crds_and_policy watch_events node_labels faults nodestate events kubeconfig http2_tls)
        add_test(NAME kube/${case}
            COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kube.py ${case})
        set_tests_properties(kube/${case} PROPERTIES LABELS integration TIMEOUT 180
            ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR};KUBECTL=${KUBECTL}")
    endforeach()
    # The NodeState case again under the upstream-shaped NodeState CRD (the other cases do not
    # touch the NodeState schema).
    add_test(NAME kube/nodestate-upstream-crds
        COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_LIST_DIR}/test_kube.py nodestate)
    set_tests_properties(kube/nodestate-upstream-crds PROPERTIES LABELS integration TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR};KUBECTL=${KUBECTL};KUBE_TEST_CRDS=upstream")
endif()
