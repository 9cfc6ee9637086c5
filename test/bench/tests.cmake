# bench/run's comparison peer: the grpc-go device-plugin server (bench/grpc-go-plugin), built
# like the fake kubelet (test/deviceplugin/tests.cmake: GOPATH mode, Debian's grpc-go) into
# ${CMAKE_BINARY_DIR}/grpc-go-plugin, reusing the Go protobuf code that the fake kubelet's
# build generates in the same GOPATH (hence the dependency on the fake-kubelet target).
# bench/run checks that it answers exactly like the agent's C plugin before timing anything.

find_program(GO_EXECUTABLE go)
find_program(PROTOC_GEN_GO_GRPC protoc-gen-go-grpc)

if(GO_EXECUTABLE AND PROTOC_GEN_GO_GRPC)
    set(BENCH_GOPATH ${CMAKE_BINARY_DIR}/gopath)
    set(BENCH_GO_PLUGIN ${CMAKE_BINARY_DIR}/grpc-go-plugin)
    set(BENCH_GO_PLUGIN_SRC ${CMAKE_SOURCE_DIR}/bench/grpc-go-plugin/main.go)
    add_custom_command(
        OUTPUT ${BENCH_GO_PLUGIN}
        COMMAND ${CMAKE_COMMAND} -E make_directory ${BENCH_GOPATH}/src/grpcgoplugin
        COMMAND ${CMAKE_COMMAND} -E copy ${BENCH_GO_PLUGIN_SRC}
                ${BENCH_GOPATH}/src/grpcgoplugin/main.go
        COMMAND ${CMAKE_COMMAND} -E chdir ${BENCH_GOPATH}/src/grpcgoplugin
                ${CMAKE_COMMAND} -E env GO111MODULE=off
                "GOPATH=${BENCH_GOPATH}:/usr/share/gocode" GOCACHE=${CMAKE_BINARY_DIR}/gocache
                ${GO_EXECUTABLE} build -o ${BENCH_GO_PLUGIN} .
        DEPENDS ${BENCH_GO_PLUGIN_SRC} ${CMAKE_SOURCE_DIR}/proto/deviceplugin.proto
        COMMENT "go build grpc-go-plugin (bench peer)")
    add_custom_target(bench-grpc-go-plugin ALL DEPENDS ${BENCH_GO_PLUGIN})
    add_dependencies(bench-grpc-go-plugin fake-kubelet)
endif()

# Not a benchmark (nothing is timed): the comparison is only fair while the grpc-go peer gives
# the C plugin's answers, so a change to either that makes them differ fails here.
find_package(Python3 COMPONENTS Interpreter)
if(TARGET bench-grpc-go-plugin AND Python3_Interpreter_FOUND)
    add_test(NAME integration/bench-peer
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/bench/run --no-build
                     --build-dir ${CMAKE_BINARY_DIR} --same-answers)
    set_tests_properties(integration/bench-peer PROPERTIES LABELS integration TIMEOUT 120)
endif()

# Not timed either: discovery's system calls per PCI function (what its time is made of) within
# a budget, counted with strace on generated trees.
# Not for the sanitizer build: its runtime makes system calls of its own, and LeakSanitizer
# cannot run under strace (ptrace).
if(Python3_Interpreter_FOUND AND NOT SANITIZE)
    add_test(NAME integration/discovery-syscalls
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/bench/syscall-budget.py
                     --agent ${SRIOV_TEST_AGENT}
                     --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
    set_tests_properties(integration/discovery-syscalls PROPERTIES LABELS integration TIMEOUT 60)
    add_test(NAME integration/quick-check-syscalls
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/bench/quick-check-syscalls.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                     --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
    set_tests_properties(integration/quick-check-syscalls PROPERTIES LABELS integration
                         TIMEOUT 90)
endif()

# Counted, not timed: an idle agent's event loop does not wake up between periodic checks, and
# makes them at the interval it is given.
if(Python3_Interpreter_FOUND)
    add_test(NAME integration/idle-wakeups
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/bench/idle-wakeups.py
                     --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                     --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
    set_tests_properties(integration/idle-wakeups PROPERTIES LABELS integration TIMEOUT 60)
endif()
