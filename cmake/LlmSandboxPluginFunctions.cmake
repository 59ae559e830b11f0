# SPDX-License-Identifier: MIT
# llm_sandbox_add_plugin(NAME <name> MANIFEST <file.yaml>
#                        [SOURCES <file>...] [LIBS <lib>...] [DATA <file>...]
#                        [OUTPUT_DIRECTORY <dir>] [INSTALL_DESTINATION <dir>])
#
# One plugin as the core loads it: NAME.so (a MODULE with hidden visibility,
# exporting only the entry symbol through the version script, linked with
# -z defs so that reaching for a core symbol fails to link: STYLE L6, H4),
# NAME.yaml beside it, and each DATA file beside them as NAME-FILE (the name
# a manifest gives a language's driver or support file). Without SOURCES the
# plugin is data only (a language described by its manifest alone).
#
# The files land in OUTPUT_DIRECTORY (default: plugins/ under the current
# binary directory), which LLM_SANDBOX_PLUGIN_PATH can name, and are
# installed into INSTALL_DESTINATION when it is given (the system's plugin
# directory is LlmSandboxPlugin_PLUGIN_DIR). Needs the target
# LlmSandboxPlugin::plugin (the ABI headers) and LLM_SANDBOX_PLUGIN_MAP (the
# version script): find_package(LlmSandboxPlugin) defines both, and so does
# the llm-sandbox source tree for its own plugins (cmake/SbxKit.cmake).
include_guard(GLOBAL)

function(llm_sandbox_add_plugin)
  cmake_parse_arguments(P "" "NAME;MANIFEST;OUTPUT_DIRECTORY;INSTALL_DESTINATION"
    "SOURCES;LIBS;DATA" ${ARGN})
  if(NOT P_NAME MATCHES "^[a-z][a-z0-9_]*$" OR NOT P_MANIFEST)
    message(FATAL_ERROR "llm_sandbox_add_plugin: NAME ([a-z][a-z0-9_]*) and MANIFEST are required")
  endif()
  if(P_UNPARSED_ARGUMENTS)
    message(FATAL_ERROR "llm_sandbox_add_plugin: unknown arguments ${P_UNPARSED_ARGUMENTS}")
  endif()
  set(out "${P_OUTPUT_DIRECTORY}")
  if(NOT out)
    set(out "${CMAKE_CURRENT_BINARY_DIR}/plugins")
  endif()
  if(P_SOURCES)
    add_library(${P_NAME} MODULE ${P_SOURCES})
    set_target_properties(${P_NAME} PROPERTIES
      PREFIX ""
      OUTPUT_NAME ${P_NAME}
      C_VISIBILITY_PRESET hidden
      CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON
      LIBRARY_OUTPUT_DIRECTORY "${out}")
    target_link_libraries(${P_NAME} PRIVATE LlmSandboxPlugin::plugin ${P_LIBS})
    if(WIN32)
      # A DLL (NAME.dll, which a manifest's NAME.so names on Windows): it
      # exports only the entry symbol (SBX_EXPORT is dllexport there, which
      # turns off exporting everything), a PE link fails on any undefined
      # symbol anyway, and the compiler's runtime is linked in; C99 printf.
      set_target_properties(${P_NAME} PROPERTIES SUFFIX ".dll")
      target_compile_definitions(${P_NAME} PRIVATE __USE_MINGW_ANSI_STDIO=1)
      target_link_options(${P_NAME} PRIVATE -static-libgcc)
    else()
      target_link_options(${P_NAME} PRIVATE
        "LINKER:-z,defs" "LINKER:--version-script=${LLM_SANDBOX_PLUGIN_MAP}")
      set_property(TARGET ${P_NAME} APPEND PROPERTY LINK_DEPENDS "${LLM_SANDBOX_PLUGIN_MAP}")
    endif()
    if(P_INSTALL_DESTINATION)
      install(TARGETS ${P_NAME} LIBRARY DESTINATION "${P_INSTALL_DESTINATION}"
        RUNTIME DESTINATION "${P_INSTALL_DESTINATION}")
    endif()
  endif()
  configure_file(${P_MANIFEST} "${out}/${P_NAME}.yaml" COPYONLY)
  if(P_INSTALL_DESTINATION)
    install(FILES ${P_MANIFEST} DESTINATION "${P_INSTALL_DESTINATION}" RENAME ${P_NAME}.yaml)
  endif()
  foreach(f ${P_DATA})
    get_filename_component(base ${f} NAME)
    configure_file(${f} "${out}/${P_NAME}-${base}" COPYONLY)
    if(P_INSTALL_DESTINATION)
      install(FILES ${f} DESTINATION "${P_INSTALL_DESTINATION}" RENAME ${P_NAME}-${base})
    endif()
  endforeach()
endfunction()
