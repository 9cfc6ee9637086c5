# Device-plugin conformance with the plugins it replaces (sriov-network-device-plugin and
# k8s-rdma-shared-dev-plugin): `ctest -L conformance`. Nodes come from the sysfs generator and
# go through the real discovery, pool builder and Allocate code; each case names the upstream
# unit test (or code) it is derived from.
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_executable(test-dp-conformance ${CMAKE_SOURCE_DIR}/test/dp-conformance/test-dp-conformance.c)
target_include_directories(test-dp-conformance PRIVATE ${CMAKE_SOURCE_DIR}/test/unit)
sriov_link_layers(test-dp-conformance ${CMAKE_SOURCE_DIR}/test/dp-conformance/test-dp-conformance.c)
target_link_libraries(test-dp-conformance PRIVATE PkgConfig::CMOCKA)
add_test(NAME conformance/deviceplugin COMMAND test-dp-conformance)
set_tests_properties(conformance/deviceplugin PROPERTIES
    LABELS "conformance;deviceplugin" TIMEOUT 120
    ENVIRONMENT "SRCDIR=${CMAKE_SOURCE_DIR};PYTHON=${Python3_EXECUTABLE}")
