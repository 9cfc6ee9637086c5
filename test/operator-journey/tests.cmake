# A cluster operator's days 0-2 (test/operator-journey/test-operator-journey.py says what it
# asserts): install, policy + network, upgrade, rollback and uninstall, through Helm and through
# the plain manifests, against test/fake-apiserver with the real kubectl and helm (both from
# scripts/install-deps; without either the test is not registered).
find_program(KUBECTL_FOR_JOURNEY kubectl)
find_program(HELM_FOR_JOURNEY helm HINTS $ENV{SRIOV_TOOLS_DIR}/bin /opt/sriov-agent-tools/bin)
if(KUBECTL_FOR_JOURNEY AND HELM_FOR_JOURNEY)
    find_program(PYTHON3_FOR_JOURNEY python3 REQUIRED)
    add_test(NAME operator-journey
             COMMAND ${PYTHON3_FOR_JOURNEY}
                     ${CMAKE_SOURCE_DIR}/test/operator-journey/test-operator-journey.py
                     ${CMAKE_SOURCE_DIR} ${SRIOV_TEST_AGENT})
    # ~50 s on a loaded 2-core machine
    set_tests_properties(operator-journey PROPERTIES LABELS "integration;manifests" TIMEOUT 300
                         ENVIRONMENT "KUBECTL=${KUBECTL_FOR_JOURNEY};HELM=${HELM_FOR_JOURNEY}")
else()
    message(STATUS "kubectl or helm not found (scripts/install-deps): test operator-journey "
                   "not registered")
endif()
