# The sriov CNI plugin binary on this host: input checks, records, VERSION, linkage
# (test/cni/check-cni.py; Python 3 stdlib). The real-kernel half is vm/lab's 07-cni.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME integration/cni-plugin
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/cni/check-cni.py
                 $<TARGET_FILE:sriov-cni>)
set_tests_properties(integration/cni-plugin PROPERTIES LABELS "integration;conformance" TIMEOUT 60)
# their cases come from upstream sriov-cni's config and allocator tests, and (netlink-netns)
# its SetupVF "Remove altName" case (pkg/sriov/sriov_test.go)
set_tests_properties(unit/test-cni-conf unit/test-cni-state unit/test-netlink-netns
                     PROPERTIES LABELS "unit;conformance")
