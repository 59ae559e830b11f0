# SPDX-License-Identifier: MIT
# Where things live, relative to the prefix. The binary finds its plugin
# directory and its agent relative to its own location (/proc/self/exe), so
# any prefix works (/usr, /opt/x, /var/lib/x) without a rebuild, and the build
# tree, laid out the same way, runs without installing.

foreach(d BINDIR LIBDIR LIBEXECDIR)
  if(IS_ABSOLUTE "${CMAKE_INSTALL_${d}}")
    file(RELATIVE_PATH SBX_REL_${d} "${CMAKE_INSTALL_PREFIX}" "${CMAKE_INSTALL_${d}}")
  else()
    set(SBX_REL_${d} "${CMAKE_INSTALL_${d}}")
  endif()
endforeach()

set(SBX_REL_PLUGINDIR "${SBX_REL_LIBDIR}/llm-sandbox/plugins")
set(SBX_REL_AGENTDIR "${SBX_REL_LIBEXECDIR}/llm-sandbox")

# Paths the binary computes from its own directory.
file(RELATIVE_PATH SBX_BIN_TO_PLUGINDIR "/p/${SBX_REL_BINDIR}" "/p/${SBX_REL_PLUGINDIR}")
file(RELATIVE_PATH SBX_BIN_TO_AGENT "/p/${SBX_REL_BINDIR}" "/p/${SBX_REL_AGENTDIR}/sbx-agent")

set(SBX_BUILD_BINDIR "${CMAKE_BINARY_DIR}/${SBX_REL_BINDIR}")
set(SBX_BUILD_PLUGINDIR "${CMAKE_BINARY_DIR}/${SBX_REL_PLUGINDIR}")
set(SBX_BUILD_AGENTDIR "${CMAKE_BINARY_DIR}/${SBX_REL_AGENTDIR}")
file(MAKE_DIRECTORY "${SBX_BUILD_PLUGINDIR}")

# The config file read when neither --config nor LLM_SANDBOX_CONFIG names
# one: absolute, under the system configuration directory (/etc for the
# prefix /usr), like any daemon's.
set(SBX_DEFAULT_CONFIG "${CMAKE_INSTALL_FULL_SYSCONFDIR}/llm-sandbox/config.yaml")
