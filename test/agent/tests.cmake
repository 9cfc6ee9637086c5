# The standalone daemon (`sriov-agent run --policy-dir`) end to end on a generated node, with
# the grpc-go fake kubelet (built by test/deviceplugin/tests.cmake) as its peer.
find_package(Python3 REQUIRED COMPONENTS Interpreter)
add_test(NAME integration/agent-standalone
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-agent-tests.py
                 --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                 --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
set_tests_properties(integration/agent-standalone PROPERTIES LABELS integration TIMEOUT 300
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")

# Restarts under continuous Allocate, SIGTERM and SIGKILL in turn, with a stand-in
# kubelet that closes a plugin's connection when its ListAndWatch stream ends, as the kubelet
# does: an Allocate already on the connection when SIGTERM is handled is answered before the
# stream ends (0 failed Allocates on SIGTERM); the windows without an endpoint are printed.
add_test(NAME integration/agent-restart-allocate
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-restart-allocate-tests.py
                 --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                 --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
set_tests_properties(integration/agent-restart-allocate PROPERTIES LABELS integration TIMEOUT 120
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")

# SIGTERM with --stop-mode auto: the agent asks systemd and logind on the system bus whether the
# node is shutting down. A private dbus-daemon and a test double of logind/systemd's manager
# (test/agent/fake-logind.c, sd-bus) stand in for them; shutdown, restart, no bus, hung bus.
add_executable(fake-logind ${CMAKE_SOURCE_DIR}/test/agent/fake-logind.c)
target_link_libraries(fake-logind PRIVATE PkgConfig::SYSTEMD)
add_test(NAME integration/agent-stop-mode
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-stop-mode-tests.py
                 --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                 --fake-logind ${SRIOV_TEST_FAKE_LOGIND}
                 --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
set_tests_properties(integration/agent-stop-mode PROPERTIES LABELS integration TIMEOUT 120
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")

# Device health from sysfs alone on a generated InfiniBand PF (no uevents or netlink events
# there: the periodic check, on every tick): its port leaving ACTIVE, a VF's PCI function
# removed, the PF's driver unbound, each one and its recovery in ListAndWatch.
add_test(NAME integration/agent-device-health
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-device-health-tests.py
                 --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                 --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
set_tests_properties(integration/agent-device-health PROPERTIES LABELS integration TIMEOUT 120
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")

# Cluster mode: real kubectl against the fake API server drives the same daemon.
find_program(KUBECTL kubectl)
if(KUBECTL)
    add_test(NAME integration/agent-cluster
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-cluster-tests.py
                     --agent ${SRIOV_TEST_AGENT}
                     --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${KUBECTL})
    # The same daemon under a NodeState CRD shaped like upstream's (prunes unknown status
    # fields): the NodeState checks only, the policy workflow does not depend on it.
    add_test(NAME integration/agent-cluster-upstream-crds
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-cluster-tests.py
                     --agent ${SRIOV_TEST_AGENT}
                     --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${KUBECTL}
                     --crds upstream)
    set_tests_properties(integration/agent-cluster-upstream-crds PROPERTIES LABELS integration
        TIMEOUT 120 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    # A node's life: reboot with the API server failing (records re-applied, READY=1, pools
    # within 100 ms of kubelet.sock), a policy deleted while down, rolling restarts.
    add_test(NAME integration/agent-lifecycle
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-lifecycle-tests.py
                     --agent ${SRIOV_TEST_AGENT}
                     --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${KUBECTL})
    set_tests_properties(integration/agent-lifecycle PROPERTIES LABELS integration
        TIMEOUT 180 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    # Link health: carrier loss, recovery and flapping of a veth named as the tree's PF in a
    # private network namespace (root; skipped otherwise), --link-health off.
    add_test(NAME integration/agent-link-health
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-link-health-tests.py
                     --agent ${SRIOV_TEST_AGENT}
                     --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${KUBECTL})
    set_tests_properties(integration/agent-link-health PROPERTIES LABELS integration
        TIMEOUT 180 SKIP_RETURN_CODE 77
        ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    # The same daemon with no inotify instance to take (a private user namespace whose
    # max_inotify_instances is 0): the NodeState checks, and its InotifyUnavailable Event.
    add_test(NAME integration/agent-cluster-no-inotify
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/run-cluster-tests.py
                     --agent ${SRIOV_TEST_AGENT}
                     --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${KUBECTL}
                     --no-inotify)
    set_tests_properties(integration/agent-cluster-no-inotify PROPERTIES LABELS integration
        TIMEOUT 120 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    # test/lib/fleet.py starts N real agents against one fake API server (for fleet
    # measurements); its own smoke test: 3 agents, every NodeState Succeeded.
    add_test(NAME integration/fleet-smoke
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/lib/fleet.py
                     --agent ${SRIOV_TEST_AGENT} --kubectl ${KUBECTL} --agents 3)
    set_tests_properties(integration/fleet-smoke PROPERTIES LABELS integration
        TIMEOUT 120 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    # bench/fleet at a small N: 20 real agents over HTTP/2 and TLS (nghttpx) through every
    # scenario (cold start, rollout, API server restart with 410 and 429, Lease failover, a
    # compressed idle window, memory), failing unless the fleet's figures are reached; so that
    # the harness behind docs/benchmarks.md's fleet table cannot rot. 77 without nghttpx.
    # Its bounds are generous (seconds to tens of seconds, counts), so it shares the machine
    # (PROCESSORS 2: 20 agents) rather than running alone. Not in the sanitizer build: its
    # agents run the code of agent-cluster, kube/faults and the soak, which run there.
    if(NOT SANITIZE)
        add_test(NAME integration/fleet-bench-small
                 COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/bench/fleet
                         --agent ${SRIOV_TEST_AGENT} --kubectl ${KUBECTL} --nodes 20
                         --quick --check)
        set_tests_properties(integration/fleet-bench-small PROPERTIES LABELS "integration;fleet"
            TIMEOUT 300 SKIP_RETURN_CODE 77 PROCESSORS 2
            ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
    endif()
else()
    add_test(NAME integration/agent-cluster
             COMMAND sh -c "echo 'kubectl not found on PATH: the cluster-mode test needs it' >&2; exit 1")
endif()
set_tests_properties(integration/agent-cluster PROPERTIES LABELS integration TIMEOUT 300
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")

# The standalone daemon with no inotify instance to take (a private user namespace whose
# max_inotify_instances is 0): it polls instead and keeps working. Skipped (77) without user
# namespaces.
add_test(NAME integration/agent-inotify-fallback
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/agent/inotify_fallback.py
                 --agent ${SRIOV_TEST_AGENT} --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet
                 --gen-sysfs ${CMAKE_SOURCE_DIR}/test/sysfs-gen/gen-sysfs.py)
set_tests_properties(integration/agent-inotify-fallback PROPERTIES LABELS integration
    TIMEOUT 120 SKIP_RETURN_CODE 77 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};BUILDDIR=${CMAKE_BINARY_DIR}")
