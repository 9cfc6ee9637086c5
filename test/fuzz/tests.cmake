# libFuzzer targets (test/fuzz/fuzz-*.c), built only with -DFUZZ=ON and clang: the library is
# instrumented for coverage plus ASan/UBSan, each target links libFuzzer's main. They are run
# by test/fuzz/run (bounded time per target), not by ctest.
if(NOT FUZZ)
    return()
endif()
if(NOT CMAKE_C_COMPILER_ID STREQUAL "Clang")
    message(FATAL_ERROR "-DFUZZ=ON needs clang (CC=clang-14): libFuzzer is part of clang")
endif()

set(FUZZ_SANITIZERS -fsanitize=address,undefined -fno-sanitize-recover=all
                    -fno-omit-frame-pointer)
foreach(lib ${LAYERS} log)
    target_compile_options(layer-${lib} PRIVATE -fsanitize=fuzzer-no-link ${FUZZ_SANITIZERS})
    target_link_options(layer-${lib} INTERFACE -fsanitize=address,undefined)
endforeach()

file(GLOB FUZZ_TARGETS CONFIGURE_DEPENDS ${CMAKE_CURRENT_LIST_DIR}/fuzz-*.c)
set(FUZZ_TARGET_NAMES)
foreach(src ${FUZZ_TARGETS})
    get_filename_component(name ${src} NAME_WE)
    add_executable(${name} ${src})
    target_include_directories(${name} PRIVATE ${CMAKE_CURRENT_LIST_DIR})
    target_compile_options(${name} PRIVATE -fsanitize=fuzzer ${FUZZ_SANITIZERS})
    target_link_options(${name} PRIVATE -fsanitize=fuzzer)
    sriov_link_layers(${name} ${src})
    list(APPEND FUZZ_TARGET_NAMES ${name})
endforeach()
add_custom_target(fuzz-targets DEPENDS ${FUZZ_TARGET_NAMES})
