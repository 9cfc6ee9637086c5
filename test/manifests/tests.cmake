# manifests/, crds/ and the install rules (test/manifests/test-manifests.py says what each
# case asserts). python3-yaml, kubectl and systemd-analyze come from scripts/install-deps.
find_program(PYTHON3_FOR_MANIFESTS python3 REQUIRED)
set(MANIFEST_CASES parse plan rbac install probe flags host hostpaths image initcni)
# The Helm chart through the real helm, which scripts/install-deps installs from npm into
# $SRIOV_TOOLS_DIR (default /opt/sriov-agent-tools).
find_program(HELM_FOR_MANIFESTS helm HINTS $ENV{SRIOV_TOOLS_DIR}/bin /opt/sriov-agent-tools/bin)
if(HELM_FOR_MANIFESTS)
    list(APPEND MANIFEST_CASES helm)
else()
    message(STATUS "helm not found (scripts/install-deps installs it): manifests/helm not registered")
endif()
# The apply and cluster cases drive the real kubectl against test/fake-apiserver.
find_program(KUBECTL_FOR_MANIFESTS kubectl)
if(KUBECTL_FOR_MANIFESTS)
    list(APPEND MANIFEST_CASES apply cluster)
    if(HELM_FOR_MANIFESTS)
        list(APPEND MANIFEST_CASES netop)
    endif()
else()
    message(STATUS "kubectl not found: tests manifests/apply and manifests/cluster not registered")
endif()
foreach(case ${MANIFEST_CASES})
    add_test(NAME manifests/${case}
             COMMAND ${PYTHON3_FOR_MANIFESTS} ${CMAKE_SOURCE_DIR}/test/manifests/test-manifests.py
                     ${case} ${SRIOV_TEST_AGENT} ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
    set_tests_properties(manifests/${case} PROPERTIES LABELS integration TIMEOUT 180
                         ENVIRONMENT "KUBECTL=${KUBECTL_FOR_MANIFESTS};HELM=${HELM_FOR_MANIFESTS}")
endforeach()
# The own-node ValidatingAdmissionPolicy's CEL, through a real CEL evaluator: npm @bufbuild/cel,
# which scripts/install-deps installs into $SRIOV_TOOLS_DIR.
find_program(NODE_FOR_MANIFESTS node)
find_path(CEL_FOR_MANIFESTS node_modules/@bufbuild/cel/package.json
          HINTS $ENV{SRIOV_TOOLS_DIR}/bufbuild-cel-0.6.1 /opt/sriov-agent-tools/bufbuild-cel-0.6.1
          NO_DEFAULT_PATH)
if(NODE_FOR_MANIFESTS AND CEL_FOR_MANIFESTS)
    set(HELM_FOR_ADMISSION "")
    if(HELM_FOR_MANIFESTS)
        set(HELM_FOR_ADMISSION ${HELM_FOR_MANIFESTS})
    endif()
    add_test(NAME manifests/admission
             COMMAND ${PYTHON3_FOR_MANIFESTS} ${CMAKE_SOURCE_DIR}/test/manifests/test-admission-policy.py
                     ${CMAKE_SOURCE_DIR} ${CEL_FOR_MANIFESTS} ${HELM_FOR_ADMISSION})
    set_tests_properties(manifests/admission PROPERTIES LABELS "integration;security" TIMEOUT 180)
else()
    message(STATUS "node or @bufbuild/cel not found (scripts/install-deps installs it): "
                   "manifests/admission not registered")
endif()
