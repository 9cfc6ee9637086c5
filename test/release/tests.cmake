# scripts/release (test/release/test-release.py says what it asserts). buildah, skopeo, umoci
# and helm come from scripts/install-deps; without them the test is not registered. Not for
# the sanitizer build: scripts/release refuses one.
find_program(BUILDAH_FOR_RELEASE buildah)
find_program(UMOCI_FOR_RELEASE umoci)
find_program(HELM_FOR_RELEASE helm HINTS $ENV{SRIOV_TOOLS_DIR}/bin /opt/sriov-agent-tools/bin)
if(SANITIZE)
    # nothing: see above
elseif(BUILDAH_FOR_RELEASE AND UMOCI_FOR_RELEASE AND HELM_FOR_RELEASE)
    find_program(PYTHON3_FOR_RELEASE python3 REQUIRED)
    add_test(NAME release/artifacts
             COMMAND ${PYTHON3_FOR_RELEASE} ${CMAKE_SOURCE_DIR}/test/release/test-release.py
                     ${CMAKE_SOURCE_DIR} ${CMAKE_BINARY_DIR})
    # The image build shares BUILD/image-deps with image/build (the first run in a build dir
    # builds libcurl, libmicrohttpd and busybox from Debian's sources, ~50 s of CPU).
    set_tests_properties(release/artifacts PROPERTIES LABELS "integration;release" TIMEOUT 300
                         RESOURCE_LOCK sriov-image ENVIRONMENT "HELM=${HELM_FOR_RELEASE}")
else()
    message(STATUS "buildah, umoci or helm not found: test release/artifacts not registered "
                   "(scripts/install-deps)")
endif()
