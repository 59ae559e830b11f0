# SPDX-License-Identifier: MIT
# CMake toolchain file: cross-compile for 64-bit Windows with Debian's
# mingw-w64 (package gcc-mingw-w64-x86-64). scripts/build-windows.sh uses it
# for the four dependencies and for llm-sandbox itself; it passes
# SBX_WINDOWS_PREFIX, the directory the dependencies were installed into.
# Programs built with it run on this machine under wine (the emulator below).

set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(SBX_MINGW_TRIPLE x86_64-w64-mingw32)

set(CMAKE_C_COMPILER ${SBX_MINGW_TRIPLE}-gcc)
set(CMAKE_CXX_COMPILER ${SBX_MINGW_TRIPLE}-g++)
set(CMAKE_RC_COMPILER ${SBX_MINGW_TRIPLE}-windres)
set(CMAKE_AR ${SBX_MINGW_TRIPLE}-ar CACHE FILEPATH "")
set(CMAKE_RANLIB ${SBX_MINGW_TRIPLE}-ranlib CACHE FILEPATH "")

# Carried into try_compile() projects, which see only the toolchain file.
list(APPEND CMAKE_TRY_COMPILE_PLATFORM_VARIABLES SBX_WINDOWS_PREFIX)

set(CMAKE_FIND_ROOT_PATH /usr/${SBX_MINGW_TRIPLE})
if(SBX_WINDOWS_PREFIX)
  list(APPEND CMAKE_FIND_ROOT_PATH ${SBX_WINDOWS_PREFIX})
endif()
# Build tools come from the host; headers and libraries only from the
# mingw sysroot and the dependency prefix, never from /usr/include.
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)

# Test programs (ctest, try_run) run under wine.
find_program(SBX_WINE NAMES wine wine64)
if(SBX_WINE)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${SBX_WINE})
endif()
