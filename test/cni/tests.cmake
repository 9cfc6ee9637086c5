# The sriov CNI plugin binary on this host: input checks, records, VERSION, linkage
# (test/cni/check-cni.py; Python 3 stdlib). The real-kernel half is vm/lab's 07-cni.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME integration/cni-plugin
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/cni/check-cni.py
                 ${SRIOV_TEST_CNI})
set_tests_properties(integration/cni-plugin PROPERTIES LABELS "integration;conformance" TIMEOUT 60)
# their cases come from upstream sriov-cni's config and allocator tests, and (netlink-netns)
# its SetupVF "Remove altName" case (pkg/sriov/sriov_test.go); test-cni-conf-ib from upstream
# ib-sriov-cni's GUID sources and ApplyVFConfig GUID cases
set_tests_properties(unit/test-cni-conf unit/test-cni-state unit/test-netlink-netns
                     unit/test-cni-conf-ib
                     PROPERTIES LABELS "unit;conformance")
# IPAM results put on the pod's interface as the reference plugins' ipam.ConfigureIface (its
# ipam_linux_test cases), veths in a private namespace
set_tests_properties(unit/test-iface-ip PROPERTIES LABELS "unit;conformance")
# the MAC read back and set again as upstream's SetVFEffectiveMAC (veth, private namespace)
set_tests_properties(unit/test-link-mac PROPERTIES LABELS "unit;conformance")
# The PodResources check (a VF must be the pod's when CNI_ARGS names the pod), against the fake
# kubelet (grpc-go; test/deviceplugin/tests.cmake builds it, 77 = skipped without Go)
add_test(NAME integration/cni-podresources
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/cni/check-cni-podres.py
                 ${SRIOV_TEST_CNI} ${CMAKE_BINARY_DIR}/fake-kubelet)
set_tests_properties(integration/cni-podresources PROPERTIES LABELS integration TIMEOUT 90
                     SKIP_RETURN_CODE 77)
