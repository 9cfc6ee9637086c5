# `sriov-agent plan` end to end on generated sysfs trees (test/sysfs-gen) and the fixtures.
find_program(PYTHON3_FOR_PLAN python3 REQUIRED)
add_test(NAME plan/seed
         COMMAND ${PYTHON3_FOR_PLAN} ${CMAKE_SOURCE_DIR}/test/plan/test-plan-cli.py
                 ${SRIOV_TEST_AGENT} ${CMAKE_SOURCE_DIR})
set_tests_properties(plan/seed PROPERTIES LABELS integration TIMEOUT 120)

# Policy conformance with upstream's api/v1 helper tests and webhook validate/mutate tests
# (each case names its upstream source), through `plan` on a generated node.
add_test(NAME plan/conformance
         COMMAND ${PYTHON3_FOR_PLAN} ${CMAKE_SOURCE_DIR}/test/plan/test-conformance.py
                 ${SRIOV_TEST_AGENT} ${CMAKE_SOURCE_DIR})
set_tests_properties(plan/conformance PROPERTIES LABELS "conformance;plan" TIMEOUT 60)

# `plan --kubeconfig --node-name` against the fake API server, seeded with the real kubectl.
find_program(KUBECTL_FOR_PLAN kubectl)
if(KUBECTL_FOR_PLAN)
    add_test(NAME plan/cluster
             COMMAND ${PYTHON3_FOR_PLAN} ${CMAKE_SOURCE_DIR}/test/plan/test-plan-cluster.py
                     ${SRIOV_TEST_AGENT} ${CMAKE_SOURCE_DIR} ${KUBECTL_FOR_PLAN})
else()
    add_test(NAME plan/cluster
             COMMAND sh -c "echo 'kubectl not found on PATH: plan/cluster needs it' >&2; exit 1")
endif()
set_tests_properties(plan/cluster PROPERTIES LABELS "integration;plan" TIMEOUT 60)
