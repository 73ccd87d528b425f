# CMake toolchain file: Win64 (x86_64-w64-mingw32) cross-build with Debian's mingw-w64,
# the posix-threads compiler (std::thread and std::mutex need it).
#
#   cmake -S clients/cpp -B build/win64-mingw \
#     -DCMAKE_TOOLCHAIN_FILE=clients/cpp/cmake/mingw-w64-x86_64.cmake \
#     -DGAME_SIDECAR_WIN64_PREFIX=<the prefix scripts/build_win64_deps printed> ...
#
# GAME_SIDECAR_WIN64_PREFIX is where abseil, protobuf, c-ares, re2 and gRPC were
# installed for mingw as static libraries (scripts/build_win64_deps builds them, with
# this same file); find_package looks there and in the mingw sysroot only, never in
# the Linux /usr. zlib is libz-mingw-w64-dev's static libz.a (not its libz.dll.a,
# which would make the DLL import zlib1.dll). scripts/test_win64 builds
# game_sidecar.dll with it; clients/cpp/capi/README.md, "Win64".
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER x86_64-w64-mingw32-gcc-posix)
set(CMAKE_CXX_COMPILER x86_64-w64-mingw32-g++-posix)
set(CMAKE_RC_COMPILER x86_64-w64-mingw32-windres)
set(CMAKE_AR x86_64-w64-mingw32-ar CACHE FILEPATH "")
set(CMAKE_RANLIB x86_64-w64-mingw32-ranlib CACHE FILEPATH "")

# try_compile re-reads this file in a fresh project: pass the prefix on.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES GAME_SIDECAR_WIN64_PREFIX)
set(CMAKE_FIND_ROOT_PATH /usr/x86_64-w64-mingw32)
if(GAME_SIDECAR_WIN64_PREFIX)
  list(PREPEND CMAKE_FIND_ROOT_PATH "${GAME_SIDECAR_WIN64_PREFIX}")
  list(APPEND CMAKE_PREFIX_PATH "${GAME_SIDECAR_WIN64_PREFIX}")
endif()
# Programs (protoc, grpc_cpp_plugin, python3) are the build machine's; headers,
# libraries and CMake packages only the target's.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
# The packages' own config files (protobuf's, gRPC's), not CMake's FindProtobuf: the
# two would define protobuf::libprotobuf twice when gRPC's config looks for protobuf.
set(CMAKE_FIND_PACKAGE_PREFER_CONFIG ON)
# Windows 10 APIs (what the launcher and the hand-built set used); static libz.a.
set(CMAKE_C_FLAGS_INIT "-D_WIN32_WINNT=0x0A00")
set(CMAKE_CXX_FLAGS_INIT "-D_WIN32_WINNT=0x0A00")
set(ZLIB_LIBRARY /usr/x86_64-w64-mingw32/lib/libz.a CACHE FILEPATH "zlib for mingw, static")
set(ZLIB_INCLUDE_DIR /usr/x86_64-w64-mingw32/include CACHE PATH "zlib for mingw")
