# `sriov-agent discover` end to end on generated sysfs trees (Python 3 stdlib).
find_package(Python3 COMPONENTS Interpreter REQUIRED)
add_test(NAME integration/discover-cli
         COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/sysfs-gen/check-discover.py
                 $<TARGET_FILE:sriov-agent>)
set_tests_properties(integration/discover-cli PROPERTIES LABELS integration TIMEOUT 300)
