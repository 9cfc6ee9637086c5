# SriovNetwork → NetworkAttachmentDefinition: the renderer's unit test follows upstream's golden
# files and controller tests, so it is a conformance test too.
set_property(TEST unit/test-nad-render APPEND PROPERTY LABELS conformance)

# Cluster mode: real kubectl against the fake API server, two replicas of `sriov-agent
# nad-controller` rendering the seed's SriovNetwork into its NetworkAttachmentDefinition with one
# writer (the Lease), and two node agents that do not (--nad-controller=off).
find_program(KUBECTL kubectl)
find_package(Python3 COMPONENTS Interpreter)
if(KUBECTL AND Python3_FOUND)
    add_test(NAME integration/nad-cluster
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/nad/run-nad-tests.py
                     --agent ${SRIOV_TEST_AGENT} --kubectl ${KUBECTL})
    set_tests_properties(integration/nad-cluster PROPERTIES LABELS "integration;conformance"
        TIMEOUT 180 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};NAD_IDLE_SECONDS=10")
endif()

# The controller among 1,600+ NADs that are not its own (beyond the informer's 2 MiB budget),
# NADs an earlier version rendered, and two replicas with the leader SIGSTOPped then killed:
# no foreign NAD written (the server counts writes per object), one writer at a time.
if(KUBECTL AND Python3_FOUND)
    add_test(NAME integration/nad-scale
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/nad/run-nad-scale-tests.py
                     --agent ${SRIOV_TEST_AGENT} --kubectl ${KUBECTL})
    set_tests_properties(integration/nad-scale PROPERTIES LABELS "integration;conformance"
        TIMEOUT 200 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR}")
endif()

# The two replicas with the leader partitioned from the API server (a proxy of its own that
# drops its traffic) and frozen (SIGSTOP, then SIGCONT after the other took over): it gives
# leadership up before the other's takeover reaches the server, and writes nothing after.
# ~100 s, mostly the Lease's 30 s, twice.
if(KUBECTL AND Python3_FOUND)
    add_test(NAME integration/nad-partition
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/nad/run-nad-partition-tests.py
                     --agent ${SRIOV_TEST_AGENT} --kubectl ${KUBECTL})
    set_tests_properties(integration/nad-partition PROPERTIES LABELS "integration;conformance"
        TIMEOUT 280 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR}")
endif()

# From the single-DaemonSet layout: a node agent holding the Lease and the NADs it rendered
# (two without the label, as an earlier version left them), then the new RBAC and the
# Deployment: every NAD keeps its spec and annotations, a labelled one is not written at all.
if(KUBECTL AND Python3_FOUND)
    add_test(NAME integration/nad-upgrade
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/nad/run-nad-partition-tests.py
                     --case upgrade --agent ${SRIOV_TEST_AGENT} --kubectl ${KUBECTL})
    set_tests_properties(integration/nad-upgrade PROPERTIES LABELS "integration;conformance"
        TIMEOUT 180 ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR}")
endif()
