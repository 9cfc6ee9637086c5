# The OCI image of scripts/build-image (test/image/test-image.py says what it asserts).
# buildah, skopeo, umoci, podman + runc and busybox-static come from scripts/install-deps;
# without buildah the test is not registered (CMake says so). Not for the sanitizer build: an
# ASan binary does not belong in an image (and LeakSanitizer cannot stop the world under a
# container's seccomp profile).
find_program(BUILDAH_FOR_IMAGE buildah)
if(SANITIZE)
    # nothing: see above
elseif(BUILDAH_FOR_IMAGE)
    find_program(PYTHON3_FOR_IMAGE python3 REQUIRED)
    add_test(NAME image/build
             COMMAND ${PYTHON3_FOR_IMAGE} ${CMAKE_SOURCE_DIR}/test/image/test-image.py
                     ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
    # TIMEOUT: the first run in a build dir also builds libcurl and busybox from Debian's
    # sources (scripts/image-deps, ~50 s of CPU; later runs reuse BUILD/image-deps)
    set_tests_properties(image/build PROPERTIES LABELS integration TIMEOUT 300
                         RESOURCE_LOCK sriov-image)
else()
    message(STATUS "buildah not found: test image/build not registered (scripts/install-deps)")
endif()
