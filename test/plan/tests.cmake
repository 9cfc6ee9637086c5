# `sriov-agent plan` end to end on generated sysfs trees (test/sysfs-gen) and the fixtures.
find_program(PYTHON3_FOR_PLAN python3 REQUIRED)
add_test(NAME plan/seed
         COMMAND ${PYTHON3_FOR_PLAN} ${CMAKE_SOURCE_DIR}/test/plan/test-plan-cli.py
                 $<TARGET_FILE:sriov-agent> ${CMAKE_SOURCE_DIR})
set_tests_properties(plan/seed PROPERTIES LABELS integration TIMEOUT 120)

# Policy conformance with upstream's api/v1 helper tests and webhook validate/mutate tests
# (each case names its upstream source), through `plan` on a generated node.
add_test(NAME plan/conformance
         COMMAND ${PYTHON3_FOR_PLAN} ${CMAKE_SOURCE_DIR}/test/plan/test-conformance.py
                 $<TARGET_FILE:sriov-agent> ${CMAKE_SOURCE_DIR})
set_tests_properties(plan/conformance PROPERTIES LABELS "conformance;plan" TIMEOUT 60)
