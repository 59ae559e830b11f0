# SPDX-License-Identifier: MIT
# sbx_soname(VAR PREFIX DEFAULT): the SONAME of the library that
# pkg_check_modules(PREFIX ...) found, for dlopen() at run time (libcurl and
# libmicrohttpd are opened on first use, core/dl/dlib.h). Read from the
# library's dynamic section with objdump; DEFAULT when that cannot be done.
# A packager may set VAR on the command line.
function(sbx_soname var prefix default)
  if(DEFINED ${var})
    return()
  endif()
  set(name "${default}")
  find_program(SBX_OBJDUMP NAMES objdump)
  foreach(lib IN LISTS ${prefix}_LINK_LIBRARIES)
    if(SBX_OBJDUMP AND lib MATCHES "\\.so")
      execute_process(COMMAND ${SBX_OBJDUMP} -p ${lib} OUTPUT_VARIABLE dyn ERROR_QUIET)
      if(dyn MATCHES "SONAME +([^\n ]+)")
        set(name "${CMAKE_MATCH_1}")
        break()
      endif()
    endif()
  endforeach()
  set(${var} "${name}" CACHE STRING "SONAME dlopen()ed for ${prefix}")
  message(STATUS "${prefix} is opened at run time as ${name}")
endfunction()
