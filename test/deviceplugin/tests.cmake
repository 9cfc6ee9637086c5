# Device-plugin integration tests: the C plugin (dp-harness) against a grpc-go fake kubelet.
#
# The fake kubelet is built in GOPATH mode from Debian's grpc-go packages into the build
# directory (see scripts/install-deps, group "device-plugin tests"). Without the Go tools the
# tests are not skipped: a test that fails with the install hint takes their place.

set(DP_TEST_DIR ${CMAKE_SOURCE_DIR}/test/deviceplugin)
set(DP_FAKE_KUBELET_DIR ${CMAKE_SOURCE_DIR}/test/fake-kubelet)

find_program(GO_EXECUTABLE go)
find_program(PROTOC_EXECUTABLE protoc)
find_program(PROTOC_GEN_GO protoc-gen-go)
find_program(PROTOC_GEN_GO_GRPC protoc-gen-go-grpc)
find_package(Python3 COMPONENTS Interpreter)

if(GO_EXECUTABLE AND PROTOC_EXECUTABLE AND PROTOC_GEN_GO AND PROTOC_GEN_GO_GRPC)
    set(DP_GOPATH ${CMAKE_BINARY_DIR}/gopath)
    set(DP_FAKE_KUBELET ${CMAKE_BINARY_DIR}/fake-kubelet)
    add_custom_command(
        OUTPUT ${DP_FAKE_KUBELET}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${DP_GOPATH}/src/fakekubelet
        COMMAND ${PROTOC_EXECUTABLE} -I ${CMAKE_SOURCE_DIR}/proto -I ${DP_FAKE_KUBELET_DIR}/proto
                --go_out=${DP_GOPATH}/src --go-grpc_out=${DP_GOPATH}/src
                ${CMAKE_SOURCE_DIR}/proto/deviceplugin.proto
                ${DP_FAKE_KUBELET_DIR}/proto/deviceplugin_service.proto
        COMMAND ${PROTOC_EXECUTABLE} -I ${CMAKE_SOURCE_DIR}/proto -I ${DP_FAKE_KUBELET_DIR}/proto
                --go_out=${DP_GOPATH}/src --go-grpc_out=${DP_GOPATH}/src
                ${CMAKE_SOURCE_DIR}/proto/podresources.proto
                ${DP_FAKE_KUBELET_DIR}/proto/podresources_service.proto
        COMMAND ${CMAKE_COMMAND} -E copy ${DP_FAKE_KUBELET_DIR}/main.go
                ${DP_GOPATH}/src/fakekubelet/main.go
        COMMAND ${CMAKE_COMMAND} -E chdir ${DP_GOPATH}/src/fakekubelet
                ${CMAKE_COMMAND} -E env GO111MODULE=off
                "GOPATH=${DP_GOPATH}:/usr/share/gocode" GOCACHE=${CMAKE_BINARY_DIR}/gocache
                ${GO_EXECUTABLE} build -o ${DP_FAKE_KUBELET} .
        DEPENDS ${DP_FAKE_KUBELET_DIR}/main.go ${CMAKE_SOURCE_DIR}/proto/deviceplugin.proto
                ${CMAKE_SOURCE_DIR}/proto/podresources.proto
                ${DP_FAKE_KUBELET_DIR}/proto/deviceplugin_service.proto
                ${DP_FAKE_KUBELET_DIR}/proto/podresources_service.proto
        COMMENT "go build fake-kubelet (grpc-go)")
    add_custom_target(fake-kubelet ALL DEPENDS ${DP_FAKE_KUBELET})
else()
    message(STATUS "device-plugin tests: Go/protoc-gen-go(-grpc) not found, fake kubelet not built")
endif()

add_executable(dp-harness ${DP_TEST_DIR}/dp-harness.c)
sriov_link_layers(dp-harness ${DP_TEST_DIR}/dp-harness.c)
# harness-loop.h: the process set-up shared with the other harness
target_include_directories(dp-harness PRIVATE ${CMAKE_SOURCE_DIR}/test/unit)
# Every real way of filling :authority is covered (see test/fake-kubelet/main.go, dialModes):
# kubelets <= 1.25 send the socket path, >= 1.26 "localhost", gRPC C-core >= 1.57 the path
# percent-encoded.
set(DP_DIAL_MODES kubelet-1.25 kubelet-1.26+ grpc-core)
foreach(mode ${DP_DIAL_MODES})
    if(TARGET fake-kubelet AND Python3_Interpreter_FOUND)
        add_test(NAME integration/deviceplugin/${mode}
                 COMMAND ${Python3_EXECUTABLE} ${DP_TEST_DIR}/run-dp-tests.py
                         --harness ${SRIOV_TEST_DP_HARNESS} --fake-kubelet ${DP_FAKE_KUBELET}
                         --dial-mode ${mode}
                         --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
        set_tests_properties(integration/deviceplugin/${mode} PROPERTIES
            LABELS "integration;deviceplugin" TIMEOUT 300
            ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    else()
        add_test(NAME integration/deviceplugin/${mode}
                 COMMAND sh -c "echo 'fake kubelet not built: install Go, grpc-go and protoc plugins (scripts/install-deps)' >&2; exit 1")
        set_tests_properties(integration/deviceplugin/${mode} PROPERTIES LABELS integration)
    endif()
endforeach()

# The disruption guard with a kubelet that cannot be asked, and PodResources asked off the loop
# (issues 12.2, 15.9): the agent daemon with the fake kubelet.
if(TARGET fake-kubelet AND Python3_Interpreter_FOUND)
    add_test(NAME integration/agent-kubelet-guard
             COMMAND ${Python3_EXECUTABLE} ${DP_TEST_DIR}/run-kubelet-guard-tests.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
    set_tests_properties(integration/agent-kubelet-guard PROPERTIES
        LABELS "integration;deviceplugin" TIMEOUT 120
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# A bad --rdma-shared-config never takes the node down; the file is watched (issue 15.6).
if(TARGET fake-kubelet AND Python3_Interpreter_FOUND)
    add_test(NAME integration/agent-rdma-config
             COMMAND ${Python3_EXECUTABLE} ${DP_TEST_DIR}/run-rdma-config-tests.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
    set_tests_properties(integration/agent-rdma-config PROPERTIES
        LABELS "integration;deviceplugin" TIMEOUT 120
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# The NodeState and Events of the device-plugin side's failures in cluster mode (issues 12.2,
# 15.6): real kubectl against the fake API server.
find_program(DP_KUBECTL kubectl)
if(TARGET fake-kubelet AND Python3_Interpreter_FOUND AND DP_KUBECTL)
    add_test(NAME integration/agent-cluster-reports
             COMMAND ${Python3_EXECUTABLE} ${DP_TEST_DIR}/run-cluster-reports.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --kubectl ${DP_KUBECTL})
    set_tests_properties(integration/agent-cluster-reports PROPERTIES
        LABELS "integration;deviceplugin" TIMEOUT 180
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()

# The seed's whole-card mode from its ConfigMap (kube-system/rdma-devices), with real kubectl,
# the fake API server enforcing manifests/20-rbac.yaml and the fake kubelet reporting the node's
# resources (what `kubectl describe node` shows).
if(TARGET fake-kubelet AND Python3_Interpreter_FOUND AND DP_KUBECTL)
    add_test(NAME integration/whole-card-configmap
             COMMAND ${Python3_EXECUTABLE} ${DP_TEST_DIR}/run-whole-card-configmap.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${DP_FAKE_KUBELET}
                     --kubectl ${DP_KUBECTL})
    set_tests_properties(integration/whole-card-configmap PROPERTIES
        LABELS "integration;deviceplugin" TIMEOUT 240
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
endif()
