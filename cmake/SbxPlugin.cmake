# SPDX-License-Identifier: MIT
# sbx_add_plugin(NAME <name> MANIFEST <file.yaml> SOURCES <...> [LIBS <...>]
#                [DATA <file>...])
#
# Builds <name>.so as a MODULE with hidden visibility, exporting exactly one
# symbol (plugin.map) and linked with -z defs, so a plugin that reaches for a
# core symbol fails to link (STYLE H4, L6). The manifest is copied beside the
# library in the build tree and installed beside it: a plugin directory is
# flat, one NAME.yaml next to the library it names. A language's data files
# (its session driver, files it stages in workspaces) go beside them as
# NAME-FILE, the name its manifest gives them.

set(SBX_PLUGIN_MAP "${CMAKE_CURRENT_LIST_DIR}/plugin.map")

function(sbx_add_plugin)
  cmake_parse_arguments(P "" "NAME;MANIFEST" "SOURCES;LIBS;DATA" ${ARGN})
  add_library(${P_NAME} MODULE ${P_SOURCES})
  set_target_properties(${P_NAME} PROPERTIES
    PREFIX ""
    OUTPUT_NAME ${P_NAME}
    C_VISIBILITY_PRESET hidden
    LIBRARY_OUTPUT_DIRECTORY "${SBX_BUILD_PLUGINDIR}")
  target_include_directories(${P_NAME} PRIVATE "${PROJECT_SOURCE_DIR}/core/include")
  target_link_options(${P_NAME} PRIVATE
    -Wl,-z,defs -Wl,--version-script=${SBX_PLUGIN_MAP})
  set_property(TARGET ${P_NAME} APPEND PROPERTY LINK_DEPENDS ${SBX_PLUGIN_MAP})
  target_link_libraries(${P_NAME} PRIVATE ${P_LIBS})
  sbx_target_flags(${P_NAME})
  sbx_target_sanitize(${P_NAME})
  configure_file(${P_MANIFEST} "${SBX_BUILD_PLUGINDIR}/${P_NAME}.yaml" COPYONLY)
  install(TARGETS ${P_NAME} LIBRARY DESTINATION "${SBX_REL_PLUGINDIR}")
  install(FILES ${P_MANIFEST} DESTINATION "${SBX_REL_PLUGINDIR}" RENAME ${P_NAME}.yaml)
  foreach(f ${P_DATA})
    get_filename_component(base ${f} NAME)
    configure_file(${f} "${SBX_BUILD_PLUGINDIR}/${P_NAME}-${base}" COPYONLY)
    install(FILES ${f} DESTINATION "${SBX_REL_PLUGINDIR}" RENAME ${P_NAME}-${base})
  endforeach()
endfunction()
