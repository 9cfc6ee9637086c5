# `sriov-agent discover` end to end on generated sysfs trees (Python 3 stdlib).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME integration/discover-cli
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/sysfs-gen/check-discover.py
                 ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:sriov-agent>)
set_tests_properties(integration/discover-cli PROPERTIES LABELS integration TIMEOUT 300)
# discover and plan on the arm64 Grace server profile (PCI domains, root complexes, NUMA); in
# a cross build (scripts/arm64/toolchain.cmake) the agent runs under its emulator
add_test(NAME integration/discover-grace
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/sysfs-gen/check-grace.py
                 ${CMAKE_SOURCE_DIR} ${CMAKE_CROSSCOMPILING_EMULATOR} $<TARGET_FILE:sriov-agent>)
set_tests_properties(integration/discover-grace PROPERTIES LABELS integration TIMEOUT 120)
