# The real-kernel SR-IOV lab (test/vm/README.md): boots a QEMU guest and runs every scenario
# against this build's sriov-agent. Not for the sanitizer build: an ASan binary does not go
# into the guest. Downloads (first run only) are cached in <build>/vm-cache or $SRIOV_VM_CACHE.
if(NOT SANITIZE)
    add_test(NAME vm/lab
             COMMAND ${CMAKE_SOURCE_DIR}/test/vm/run --agent $<TARGET_FILE:sriov-agent>)
    # PROCESSORS 2: the guest's two vCPUs use both cores; ctest -j2 then runs it alone
    set_tests_properties(vm/lab PROPERTIES LABELS vm TIMEOUT 600 PROCESSORS 2)
endif()

# The seed's workflow end to end on the lab's kernel (test/vm/README.md, "End to end"): the
# fake API server on this host, real kubectl and the grpc-go fake kubelet in the guest. Needs a
# kubectl binary that runs on its own in the guest: the newest kubectl.1.* of a Google Cloud SDK
# install, else the kubectl on PATH (kubectl is not a Debian package).
if(NOT SANITIZE AND TARGET fake-kubelet)
    file(GLOB VM_E2E_KUBECTLS /usr/lib/google-cloud-sdk/bin/kubectl.1.*)
    if(VM_E2E_KUBECTLS)
        list(SORT VM_E2E_KUBECTLS COMPARE NATURAL)
        list(GET VM_E2E_KUBECTLS -1 VM_E2E_KUBECTL)
    else()
        find_program(VM_E2E_KUBECTL kubectl)
    endif()
    if(VM_E2E_KUBECTL)
        add_test(NAME vm/e2e
                 COMMAND ${CMAKE_SOURCE_DIR}/test/vm/e2e/run --agent $<TARGET_FILE:sriov-agent>
                         --fake-kubelet ${CMAKE_BINARY_DIR}/fake-kubelet --kubectl ${VM_E2E_KUBECTL})
        set_tests_properties(vm/e2e PROPERTIES LABELS vm TIMEOUT 600 PROCESSORS 2)
    else()
        message(STATUS "vm/e2e: no kubectl found; the end-to-end lab test is not registered")
    endif()
endif()
