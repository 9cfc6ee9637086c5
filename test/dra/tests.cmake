# DRA integration tests: the C DRA plugin (dra-harness, later the agent) against a grpc-go fake
# of the kubelet's DRA side (test/fake-dra-kubelet), built like the device-plugin fake kubelet
# (GOPATH mode, Debian's grpc-go; see test/deviceplugin/tests.cmake).

set(DRA_TEST_DIR ${CMAKE_SOURCE_DIR}/test/dra)
set(DRA_FAKE_DIR ${CMAKE_SOURCE_DIR}/test/fake-dra-kubelet)

find_program(GO_EXECUTABLE go)
find_program(PROTOC_EXECUTABLE protoc)
find_program(PROTOC_GEN_GO protoc-gen-go)
find_program(PROTOC_GEN_GO_GRPC protoc-gen-go-grpc)
find_package(Python3 COMPONENTS Interpreter)

if(GO_EXECUTABLE AND PROTOC_EXECUTABLE AND PROTOC_GEN_GO AND PROTOC_GEN_GO_GRPC)
    set(DRA_GOPATH ${CMAKE_BINARY_DIR}/gopath-dra)
    set(DRA_FAKE_KUBELET ${CMAKE_BINARY_DIR}/go-bin/fake-dra-kubelet)
    set(DRA_PROTO_INPUTS ${CMAKE_SOURCE_DIR}/proto/draplugin.proto
        ${CMAKE_SOURCE_DIR}/proto/pluginregistration.proto
        ${DRA_FAKE_DIR}/proto/draplugin_v1_service.proto
        ${DRA_FAKE_DIR}/proto/draplugin_v1beta1_service.proto
        ${DRA_FAKE_DIR}/proto/pluginregistration_service.proto
        ${CMAKE_SOURCE_DIR}/proto/drahealth.proto
        ${DRA_FAKE_DIR}/proto/drahealth_v1alpha1_service.proto
        ${DRA_FAKE_DIR}/proto/drahealth_v1beta1_service.proto
        ${DRA_FAKE_DIR}/proto/drahealth_v1_service.proto)
    add_custom_command(
        OUTPUT ${DRA_FAKE_KUBELET}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${DRA_GOPATH}/src/fakedrakubelet
        COMMAND ${PROTOC_EXECUTABLE} -I ${CMAKE_SOURCE_DIR}/proto -I ${DRA_FAKE_DIR}/proto
                --go_out=${DRA_GOPATH}/src --go-grpc_out=${DRA_GOPATH}/src
                ${DRA_PROTO_INPUTS}
        COMMAND ${CMAKE_COMMAND} -E copy ${DRA_FAKE_DIR}/main.go
                ${DRA_GOPATH}/src/fakedrakubelet/main.go
        COMMAND ${CMAKE_COMMAND} -E chdir ${DRA_GOPATH}/src/fakedrakubelet
                ${CMAKE_COMMAND} -E env GO111MODULE=off
                "GOPATH=${DRA_GOPATH}:/usr/share/gocode" GOCACHE=${CMAKE_BINARY_DIR}/gocache
                ${GO_EXECUTABLE} build -o ${DRA_FAKE_KUBELET} .
        DEPENDS ${DRA_FAKE_DIR}/main.go ${DRA_PROTO_INPUTS}
        COMMENT "go build fake-dra-kubelet (grpc-go)")
    add_custom_target(fake-dra-kubelet ALL DEPENDS ${DRA_FAKE_KUBELET})
endif()

add_executable(dra-harness ${DRA_TEST_DIR}/dra-harness.c)
sriov_link_layers(dra-harness ${DRA_TEST_DIR}/dra-harness.c)
# harness-loop.h: the process set-up shared with the other harness
target_include_directories(dra-harness PRIVATE ${CMAKE_SOURCE_DIR}/test/unit)

# Registration, Prepare/Unprepare (twice), a kubelet restart, a removed socket and a restart
# of the plugin, once per DRAPlugin version the kubelet may speak.
foreach(api v1 v1beta1)
    if(TARGET fake-dra-kubelet AND Python3_Interpreter_FOUND)
        add_test(NAME integration/dra/registration-${api}
                 COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-registration.py
                         --harness ${SRIOV_TEST_DRA_HARNESS}
                         --fake-kubelet ${DRA_FAKE_KUBELET} --api ${api})
        set_tests_properties(integration/dra/registration-${api} PROPERTIES
            LABELS "integration;dra" TIMEOUT 120)
    else()
        add_test(NAME integration/dra/registration-${api}
                 COMMAND sh -c "echo 'fake DRA kubelet not built: install Go, grpc-go and protoc plugins (scripts/install-deps)' >&2; exit 1")
        set_tests_properties(integration/dra/registration-${api} PROPERTIES LABELS integration)
    endif()
endforeach()

# Per resource, device plugin or DRA, never both: the agent with both kubelet doubles.
if(TARGET fake-dra-kubelet AND TARGET fake-kubelet AND Python3_Interpreter_FOUND)
    add_test(NAME integration/dra/resource-choice
             COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-resource-choice.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --fake-dra-kubelet ${DRA_FAKE_KUBELET}
                     --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
    set_tests_properties(integration/dra/resource-choice PROPERTIES
        LABELS "integration;dra" TIMEOUT 120)
endif()

# The node's ResourceSlices through the API: real kubectl, the strict fake API server.
find_program(DRA_KUBECTL kubectl)
if(TARGET fake-dra-kubelet AND TARGET fake-kubelet AND Python3_Interpreter_FOUND AND DRA_KUBECTL)
    add_test(NAME integration/dra/resource-slices
             COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-slices.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --fake-dra-kubelet ${DRA_FAKE_KUBELET} --kubectl ${DRA_KUBECTL})
    set_tests_properties(integration/dra/resource-slices PROPERTIES
        LABELS "integration;dra" TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# ResourceSlices across a kubelet's life: none before the kubelet registers the driver, back
# after the kubelet's wipe at its restart and after a deletion, left to the kubelet's wipe of a
# gone driver.
if(TARGET fake-dra-kubelet AND TARGET fake-kubelet AND Python3_Interpreter_FOUND AND DRA_KUBECTL)
    add_test(NAME integration/dra/kubelet-life
             COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-kubelet-life.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --fake-dra-kubelet ${DRA_FAKE_KUBELET} --kubectl ${DRA_KUBECTL})
    set_tests_properties(integration/dra/kubelet-life PROPERTIES
        LABELS "integration;dra" TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# What a claim gets beyond its devices: one resource over resource.k8s.io/v1's limits left out
# alone, per-device environment for two claims of one resource, VfConfig, status.devices, and
# the claim record's namespace and reserved pods.
if(TARGET fake-dra-kubelet AND TARGET fake-kubelet AND Python3_Interpreter_FOUND AND DRA_KUBECTL)
    add_test(NAME integration/dra/claims
             COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-claims.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --fake-dra-kubelet ${DRA_FAKE_KUBELET} --kubectl ${DRA_KUBECTL})
    set_tests_properties(integration/dra/claims PROPERTIES
        LABELS "integration;dra" TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# The fake API server's resource.k8s.io/v1 kinds: validation and RBAC, with real kubectl.
if(Python3_Interpreter_FOUND AND DRA_KUBECTL)
    add_test(NAME integration/dra/fake-apiserver
             COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-fake-apiserver-dra.py
                     --kubectl ${DRA_KUBECTL})
    set_tests_properties(integration/dra/fake-apiserver PROPERTIES
        LABELS "integration;dra" TIMEOUT 120
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# NodePrepareResources/NodeUnprepareResources from the agent: claims read from the API, CDI
# specs, records across restarts; once per DRAPlugin version.
foreach(api v1 v1beta1)
    if(TARGET fake-dra-kubelet AND TARGET fake-kubelet AND Python3_Interpreter_FOUND AND
       DRA_KUBECTL)
        add_test(NAME integration/dra/prepare-${api}
                 COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-prepare.py
                         --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                         --fake-dra-kubelet ${DRA_FAKE_KUBELET} --api ${api}
                         --kubectl ${DRA_KUBECTL})
        set_tests_properties(integration/dra/prepare-${api} PROPERTIES
            LABELS "integration;dra" TIMEOUT 180
            ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    endif()
endforeach()

# A whole-card RDMA pool through DRA: one device per card, Prepare hands out its char devices.
if(TARGET fake-dra-kubelet AND TARGET fake-kubelet AND Python3_Interpreter_FOUND AND DRA_KUBECTL)
    add_test(NAME integration/dra/whole-card
             COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-wholecard.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --fake-dra-kubelet ${DRA_FAKE_KUBELET} --kubectl ${DRA_KUBECTL})
    set_tests_properties(integration/dra/whole-card PROPERTIES
        LABELS "integration;dra" TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# The scheduler's matchAttribute pcieRoot rule, played by the test, over the agent's slice and
# a stand-in GPU driver's slice; Prepare hands out the VF under the chosen GPU's root.
if(TARGET fake-dra-kubelet AND TARGET fake-kubelet AND Python3_Interpreter_FOUND AND DRA_KUBECTL)
    add_test(NAME integration/dra/gpu-nic-allocation
             COMMAND ${Python3_EXECUTABLE} ${DRA_TEST_DIR}/run-dra-allocation.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --fake-dra-kubelet ${DRA_FAKE_KUBELET} --kubectl ${DRA_KUBECTL})
    set_tests_properties(integration/dra/gpu-nic-allocation PROPERTIES
        LABELS "integration;dra" TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()
