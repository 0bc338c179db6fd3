# Cross-compiles for arm64 (Neoverse servers) with Debian's crossbuild-essential-arm64 against a
# sysroot of Debian 12's arm64 packages unpacked by scripts/arm64-sysroot.sh; nothing of arm64 is
# installed into the machine (libpapi-dev:arm64 and libpapi-dev cannot be installed side by side).
#   cmake -S . -B build-arm64 -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake \
#         -DHWPERF_ARM64_SYSROOT=/path/to/sysroot
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)

if(NOT HWPERF_ARM64_SYSROOT)
  set(HWPERF_ARM64_SYSROOT "$ENV{HWPERF_ARM64_SYSROOT}")
endif()
if(NOT HWPERF_ARM64_SYSROOT OR NOT EXISTS "${HWPERF_ARM64_SYSROOT}/usr/include/papi.h")
  message(FATAL_ERROR "no arm64 sysroot at '${HWPERF_ARM64_SYSROOT}': make one with "
                      "scripts/arm64-sysroot.sh DIR and pass -DHWPERF_ARM64_SYSROOT=DIR")
endif()
# try_compile projects need it too.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES HWPERF_ARM64_SYSROOT)
set(CMAKE_SYSROOT "${HWPERF_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH "${HWPERF_ARM64_SYSROOT}")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# pkg-config reads the sysroot's .pc files and prefixes their paths with it.
set(ENV{PKG_CONFIG_SYSROOT_DIR} "${HWPERF_ARM64_SYSROOT}")
set(ENV{PKG_CONFIG_LIBDIR}
    "${HWPERF_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu/pkgconfig:${HWPERF_ARM64_SYSROOT}/usr/share/pkgconfig")
# The tests run under qemu-aarch64-static -L SYSROOT (binfmt_misc is not mounted on the CI
# machine): CTest and the tests that start the exporter call the emulator explicitly.
set(CMAKE_CROSSCOMPILING_EMULATOR qemu-aarch64-static -L "${HWPERF_ARM64_SYSROOT}")
