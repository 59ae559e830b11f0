# SPDX-License-Identifier: MIT
# The plugin authors' kit: the ABI headers, the version script, a
# pkg-config file (llm-sandbox-plugin.pc) and a CMake package
# (LlmSandboxPlugin), all named after the project and all relocatable
# (relative to their own location) unless the build was given absolute
# install directories. In the tree, LlmSandboxPlugin::plugin is the same
# target the package gives, so in-tree plugins build by the rules
# third-party ones get (cmake/LlmSandboxPluginFunctions.cmake).

include(CMakePackageConfigHelpers)

# The ABI version, from the header itself.
file(STRINGS "${PROJECT_SOURCE_DIR}/core/include/llm-sandbox/plugin.h" abi_lines
  REGEX "^#define SBX_ABI_M(AJOR|INOR) +[0-9]+")
foreach(line IN LISTS abi_lines)
  if(line MATCHES "SBX_ABI_(MAJOR|MINOR) +([0-9]+)")
    set(SBX_ABI_${CMAKE_MATCH_1} ${CMAKE_MATCH_2})
  endif()
endforeach()
if(NOT DEFINED SBX_ABI_MAJOR OR NOT DEFINED SBX_ABI_MINOR)
  message(FATAL_ERROR "SbxKit: no SBX_ABI_MAJOR/MINOR in core/include/llm-sandbox/plugin.h")
endif()

set(LLM_SANDBOX_PLUGIN_MAP "${PROJECT_SOURCE_DIR}/cmake/plugin.map")
add_library(sbx_plugin_abi INTERFACE)
target_include_directories(sbx_plugin_abi INTERFACE "${PROJECT_SOURCE_DIR}/core/include")
add_library(LlmSandboxPlugin::plugin ALIAS sbx_plugin_abi)

# Installed: the public headers (never sbx.h, the core's private API), the
# version script, the function file.
set(SBX_KIT_INCLUDEDIR "${CMAKE_INSTALL_INCLUDEDIR}")
set(SBX_KIT_MAPFILE "${CMAKE_INSTALL_DATADIR}/llm-sandbox/plugin.map")
set(SBX_KIT_PLUGINDIR "${SBX_REL_PLUGINDIR}")
if(IS_ABSOLUTE "${CMAKE_INSTALL_LIBDIR}")
  set(SBX_KIT_PLUGINDIR "${CMAKE_INSTALL_LIBDIR}/llm-sandbox/plugins")
endif()
set(SBX_KIT_CMAKEDIR "${CMAKE_INSTALL_LIBDIR}/cmake/LlmSandboxPlugin")
install(DIRECTORY "${PROJECT_SOURCE_DIR}/core/include/llm-sandbox"
  DESTINATION "${SBX_KIT_INCLUDEDIR}" FILES_MATCHING PATTERN "plugin*.h")
install(FILES "${LLM_SANDBOX_PLUGIN_MAP}" DESTINATION "${CMAKE_INSTALL_DATADIR}/llm-sandbox")

# pkg-config: prefix relative to ${pcfiledir}; a directory given absolute
# stays absolute.
set(pcdir "${CMAKE_INSTALL_LIBDIR}/pkgconfig")
if(IS_ABSOLUTE "${pcdir}")
  set(SBX_PC_PREFIX "${CMAKE_INSTALL_PREFIX}")
else()
  file(RELATIVE_PATH up "/p/${pcdir}" "/p")
  string(REGEX REPLACE "/$" "" up "${up}")
  set(SBX_PC_PREFIX "\${pcfiledir}/${up}")
endif()
foreach(v INCLUDEDIR MAPFILE PLUGINDIR)
  if(IS_ABSOLUTE "${SBX_KIT_${v}}")
    set(SBX_PC_${v} "${SBX_KIT_${v}}")
  else()
    set(SBX_PC_${v} "\${prefix}/${SBX_KIT_${v}}")
  endif()
endforeach()
configure_file("${PROJECT_SOURCE_DIR}/core/llm-sandbox-plugin.pc.in"
  "${CMAKE_BINARY_DIR}/kit/llm-sandbox-plugin.pc" @ONLY)
install(FILES "${CMAKE_BINARY_DIR}/kit/llm-sandbox-plugin.pc" DESTINATION "${pcdir}")

# CMake: paths computed from the config file's own location.
configure_package_config_file("${PROJECT_SOURCE_DIR}/cmake/LlmSandboxPluginConfig.cmake.in"
  "${CMAKE_BINARY_DIR}/kit/LlmSandboxPluginConfig.cmake"
  INSTALL_DESTINATION "${SBX_KIT_CMAKEDIR}"
  PATH_VARS SBX_KIT_INCLUDEDIR SBX_KIT_MAPFILE SBX_KIT_PLUGINDIR)
write_basic_package_version_file("${CMAKE_BINARY_DIR}/kit/LlmSandboxPluginConfigVersion.cmake"
  VERSION ${SBX_ABI_MAJOR}.${SBX_ABI_MINOR} COMPATIBILITY SameMajorVersion)
install(FILES "${CMAKE_BINARY_DIR}/kit/LlmSandboxPluginConfig.cmake"
  "${CMAKE_BINARY_DIR}/kit/LlmSandboxPluginConfigVersion.cmake"
  "${PROJECT_SOURCE_DIR}/cmake/LlmSandboxPluginFunctions.cmake"
  DESTINATION "${SBX_KIT_CMAKEDIR}")
