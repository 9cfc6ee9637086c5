# Issue 11.9: every sd-event timer of the product has an explicit, non-zero accuracy (sd-event
# turns 0 into 250 ms). A static scan of the sources outside test/; it checks itself first.
find_package(Python3 COMPONENTS Interpreter)
if(Python3_FOUND)
    add_test(NAME unit/timer-accuracy
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_SOURCE_DIR}/test/timers/check-timer-accuracy.py
                     ${CMAKE_SOURCE_DIR})
    set_tests_properties(unit/timer-accuracy PROPERTIES LABELS unit TIMEOUT 30)
endif()
