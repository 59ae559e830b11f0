# SPDX-License-Identifier: MIT
# The Windows build of the core, the MCP server and the CLI (issue 28;
# core/CMakeLists.txt includes this when WIN32 and stops). The same
# sources as on Linux, less the parts that only make sense on Linux: the
# host services (cgroups, seccomp, namespaces, uid ranges, the fork/exec
# layer), the engine's steps, sessions, pools, installs, the agent channel,
# the network layer and the unix-socket and HTTP transports. What the kept
# parts call of those is answered by core/src/platform/win_absent.c, which
# says "not on Windows" and refuses; Windows' own functions (processes,
# randomness, the cancellation event, the executable's path) are in
# core/src/platform/.

add_library(sbxcore STATIC
  src/runtime/runtime.c src/runtime/describe.c src/runtime/report.c src/runtime/run.c
  src/engine/execution.c src/engine/prepare.c src/engine/box.c src/engine/stage.c
  src/engine/program.c src/engine/plan.c src/engine/artifacts.c
  src/channel/agentc.c src/channel/agentc_files.c src/channel/agentc_converse.c
  src/channel/agentc_zygote.c
  src/plugins/loader.c src/plugins/registry.c src/plugins/manifest.c
  src/plugins/manifest_lang.c src/plugins/manifest_schema.c
  src/plugins/manifest_rules.c src/plugins/plugin_settings.c
  src/policy/settings.c src/policy/config.c src/policy/policy.c
  src/base/error.c src/base/dynbuf.c src/base/util.c src/base/log.c src/base/yamltree.c
  src/platform/win_absent.c src/platform/win_base.c src/platform/cmdline.c
  src/platform/win_proc.c src/platform/win_host.c src/platform/minire.c
  src/platform/win_seccomp.c)
# The seccomp policy as BPF for a WSL2 distribution's kernel, compiled on
# the build machine by scripts/build-windows.sh (src/platform/win_seccomp.c).
if(SBX_WINDOWS_SECCOMP_BPF)
  target_sources(sbxcore PRIVATE ${SBX_WINDOWS_SECCOMP_BPF})
  target_compile_definitions(sbxcore PRIVATE SBX_SECCOMP_PREBUILT)
endif()
target_include_directories(sbxcore PUBLIC include PRIVATE src agent ${LTDL_INCLUDE_DIR})
target_compile_definitions(sbxcore PRIVATE
  SBX_VERSION="${PROJECT_VERSION}"
  SBX_BIN_TO_PLUGINDIR="${SBX_BIN_TO_PLUGINDIR}"
  SBX_BIN_TO_AGENT="${SBX_BIN_TO_AGENT}")
target_link_libraries(sbxcore PUBLIC PkgConfig::JSONC
  PRIVATE PkgConfig::YAML ${LTDL_LIBRARY} Threads::Threads bcrypt)
sbx_target_flags(sbxcore)

# Every Windows target of the core, the MCP server and the CLI: the POSIX
# names mingw-w64 lacks (compat_win.h, force-included) and the headers it
# has not (win-include/: sys/random.h, sys/uio.h).
# mingw's own printf (C99: %zu, %lld), not msvcrt's; its isfinite() goes
# through float for a double argument, which -Wfloat-conversion flags.
set(SBX_WIN_COMPAT -include ${CMAKE_CURRENT_SOURCE_DIR}/src/platform/compat_win.h
  -D__USE_MINGW_ANSI_STDIO=1 -Wno-float-conversion)
set(SBX_WIN_INCLUDE ${CMAKE_CURRENT_SOURCE_DIR}/src/platform/win-include)
target_compile_options(sbxcore PRIVATE ${SBX_WIN_COMPAT})
target_include_directories(sbxcore PRIVATE ${SBX_WIN_INCLUDE})

configure_file(include/llm-sandbox/sbx.h
  ${CMAKE_CURRENT_BINARY_DIR}/mcp-include/llm-sandbox/sbx.h COPYONLY)
add_library(sbxmcp STATIC mcp/jsonrpc.c mcp/args.c mcp/limits.c mcp/catalog.c mcp/methods.c
  mcp/server.c mcp/protocol.c mcp/results.c mcp/tools.c mcp/session_tools.c mcp/b64.c
  mcp/stream.c mcp/stdio_win.c mcp/fixtures.c)
target_include_directories(sbxmcp PRIVATE ${CMAKE_CURRENT_BINARY_DIR}/mcp-include)
target_link_libraries(sbxmcp PUBLIC PkgConfig::JSONC Threads::Threads)
sbx_target_flags(sbxmcp)
target_compile_options(sbxmcp PRIVATE ${SBX_WIN_COMPAT})
target_include_directories(sbxmcp PRIVATE ${SBX_WIN_INCLUDE})

# The application manifest (src/platform/llm-sandbox.exe.manifest: UTF-8 as
# the process's code page), embedded as resource 1 of type 24 (RT_MANIFEST).
enable_language(RC)
file(WRITE ${CMAKE_CURRENT_BINARY_DIR}/llm-sandbox.rc
  "1 24 \"${CMAKE_CURRENT_SOURCE_DIR}/src/platform/llm-sandbox.exe.manifest\"\n")
add_executable(llm-sandbox cli/main.c cli/run_cmd.c cli/io.c
  cli/info_cmd.c cli/serve_cmd.c cli/progress.c cli/absent_win.c
  ${CMAKE_CURRENT_BINARY_DIR}/llm-sandbox.rc)
set_property(SOURCE ${CMAKE_CURRENT_BINARY_DIR}/llm-sandbox.rc APPEND PROPERTY
  OBJECT_DEPENDS ${CMAKE_CURRENT_SOURCE_DIR}/src/platform/llm-sandbox.exe.manifest)
set_target_properties(llm-sandbox PROPERTIES RUNTIME_OUTPUT_DIRECTORY "${SBX_BUILD_BINDIR}")
target_include_directories(llm-sandbox PRIVATE mcp)
target_link_libraries(llm-sandbox PRIVATE sbxmcp sbxcore)
sbx_target_flags(llm-sandbox)
target_compile_options(llm-sandbox PRIVATE ${SBX_WIN_COMPAT})
target_include_directories(llm-sandbox PRIVATE ${SBX_WIN_INCLUDE})
# libgcc and libwinpthread inside the executable: fewer DLLs to ship.
target_link_options(llm-sandbox PRIVATE -static-libgcc -Wl,-Bstatic -lwinpthread -Wl,-Bdynamic)
install(TARGETS llm-sandbox RUNTIME DESTINATION "${SBX_REL_BINDIR}")
