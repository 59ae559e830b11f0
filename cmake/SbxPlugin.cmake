# SPDX-License-Identifier: MIT
# sbx_add_plugin(NAME <name> MANIFEST <file.yaml> SOURCES <...> [LIBS <...>]
#                [DATA <file>...])
#
# An in-tree plugin: llm_sandbox_add_plugin() (LlmSandboxPluginFunctions.cmake,
# the same rules third-party plugins get from the installed CMake package),
# built into the build tree's plugin directory, installed into the
# prefix's, and compiled with the project's warnings and sanitizers. A
# plugin directory is flat, one NAME.yaml next to the library it names.

include(LlmSandboxPluginFunctions)

function(sbx_add_plugin)
  cmake_parse_arguments(P "" "NAME;MANIFEST" "SOURCES;LIBS;DATA" ${ARGN})
  llm_sandbox_add_plugin(NAME ${P_NAME} MANIFEST ${P_MANIFEST} SOURCES ${P_SOURCES}
    LIBS ${P_LIBS} DATA ${P_DATA}
    OUTPUT_DIRECTORY "${SBX_BUILD_PLUGINDIR}" INSTALL_DESTINATION "${SBX_REL_PLUGINDIR}")
  sbx_target_flags(${P_NAME})
  sbx_target_sanitize(${P_NAME})
endfunction()
