# CMake toolchain file: cross-build sriov-agent for arm64 (aarch64-linux-gnu) with Debian's
# cross compiler (package gcc-aarch64-linux-gnu) against the private sysroot that
# scripts/arm64/sysroot unpacks from Debian's arm64 packages. The programs built for tests run
# under qemu-aarch64 user emulation (package qemu-user), which CTest puts in front of each test
# program (CMAKE_CROSSCOMPILING_EMULATOR) with the sysroot as its library prefix.
#
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=scripts/arm64/toolchain.cmake \
#         -DSRIOV_ARM64_SYSROOT=/path/to/sysroot
#
# Programs the build itself runs (protoc-c; go for the test peers) stay the build machine's;
# the man page, which runs the agent, wants -DMANPAGE=OFF (test/arm64/run passes it).
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(SRIOV_ARM64_TRIPLET aarch64-linux-gnu)

if(NOT SRIOV_ARM64_SYSROOT)
    set(SRIOV_ARM64_SYSROOT "$ENV{SRIOV_ARM64_SYSROOT}")
endif()
if(NOT SRIOV_ARM64_SYSROOT OR NOT EXISTS "${SRIOV_ARM64_SYSROOT}/usr/include/stdio.h")
    message(FATAL_ERROR "SRIOV_ARM64_SYSROOT='${SRIOV_ARM64_SYSROOT}' is no arm64 sysroot: "
                        "make one with scripts/arm64/sysroot DIR and pass -DSRIOV_ARM64_SYSROOT=DIR")
endif()
# try_compile() projects read this file again: hand them the sysroot too
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES SRIOV_ARM64_SYSROOT)

set(CMAKE_C_COMPILER ${SRIOV_ARM64_TRIPLET}-gcc)
set(CMAKE_SYSROOT "${SRIOV_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${SRIOV_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# pkg-config reads the sysroot's .pc files only, and prefixes their paths with it
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${SRIOV_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${SRIOV_ARM64_SYSROOT}/usr/lib/${SRIOV_ARM64_TRIPLET}/pkgconfig:${SRIOV_ARM64_SYSROOT}/usr/share/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")

find_program(SRIOV_QEMU_AARCH64 qemu-aarch64)
if(SRIOV_QEMU_AARCH64)
    set(CMAKE_CROSSCOMPILING_EMULATOR "${SRIOV_QEMU_AARCH64};-L;${SRIOV_ARM64_SYSROOT}")
endif()
