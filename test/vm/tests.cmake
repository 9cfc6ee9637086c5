# The real-kernel SR-IOV lab (test/vm/README.md): boots a QEMU guest and runs every scenario
# against this build's sriov-agent. Not for the sanitizer build: an ASan binary does not go
# into the guest. Downloads (first run only) are cached in <build>/vm-cache or $SRIOV_VM_CACHE.
if(NOT SANITIZE)
    add_test(NAME vm/lab
             COMMAND ${CMAKE_SOURCE_DIR}/test/vm/run --agent $<TARGET_FILE:sriov-agent>)
    # PROCESSORS 2: the guest's two vCPUs use both cores; ctest -j2 then runs it alone
    set_tests_properties(vm/lab PROPERTIES LABELS vm TIMEOUT 600 PROCESSORS 2)
endif()
