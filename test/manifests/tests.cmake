# manifests/, crds/ and the install rules (test/manifests/test-manifests.py says what each
# case asserts). python3-yaml, kubectl and systemd-analyze come from scripts/install-deps.
find_program(PYTHON3_FOR_MANIFESTS python3 REQUIRED)
set(MANIFEST_CASES parse plan rbac install probe)
# The apply case drives the real kubectl against test/fake-apiserver.
find_program(KUBECTL_FOR_MANIFESTS kubectl)
if(KUBECTL_FOR_MANIFESTS)
    list(APPEND MANIFEST_CASES apply)
else()
    message(STATUS "kubectl not found: test manifests/apply not registered")
endif()
# The flags and host cases run `sriov-agent run`; they exist once the run command is part of
# the tree.
if(EXISTS ${CMAKE_SOURCE_DIR}/agent/cmd-run.c)
    list(APPEND MANIFEST_CASES flags host)
else()
    message(STATUS "no 'sriov-agent run' yet: tests manifests/flags and host not registered")
endif()
foreach(case ${MANIFEST_CASES})
    add_test(NAME manifests/${case}
             COMMAND ${PYTHON3_FOR_MANIFESTS} ${CMAKE_SOURCE_DIR}/test/manifests/test-manifests.py
                     ${case} $<TARGET_FILE:sriov-agent> ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
    set_tests_properties(manifests/${case} PROPERTIES LABELS integration TIMEOUT 180
                         ENVIRONMENT "KUBECTL=${KUBECTL_FOR_MANIFESTS}")
endforeach()
