# SPDX-License-Identifier: MIT
# Warning set (STYLE.md L3), -Werror only when SBX_WERROR is ON (L4), and
# hardening for optimised builds (L5). Appends to, never replaces, the
# CFLAGS/LDFLAGS a packager passes (dpkg-buildflags).

set(SBX_WARNINGS
  -Wall -Wextra -Wpedantic -Wshadow -Wstrict-prototypes -Wmissing-prototypes
  -Wmissing-declarations -Wformat=2 -Wimplicit-fallthrough -Wswitch-enum
  -Wundef -Wpointer-arith -Wcast-align -Wvla -Wnull-dereference -Wconversion)
if(SBX_WERROR)
  list(APPEND SBX_WARNINGS -Werror)
endif()

set(SBX_HARDEN_C "")
set(SBX_HARDEN_LD "")
if(CMAKE_BUILD_TYPE MATCHES "Rel" AND NOT SBX_SANITIZE)
  set(SBX_HARDEN_C -D_FORTIFY_SOURCE=3 -fstack-protector-strong
    -fstack-clash-protection -fcf-protection)
endif()
set(SBX_HARDEN_LD -Wl,-z,relro,-z,now -Wl,-z,noexecstack -Wl,--as-needed)
if(WIN32)
  # mingw-w64: the ELF options above mean nothing to a PE linker, and
  # _FORTIFY_SOURCE and the stack protector need libssp, which Windows
  # users would have to ship; PE images get ASLR and DEP by default.
  set(SBX_HARDEN_C "")
  set(SBX_HARDEN_LD "")
endif()

# sbx_target_flags(target): warnings, hardening and _GNU_SOURCE for one target.
function(sbx_target_flags tgt)
  target_compile_options(${tgt} PRIVATE ${SBX_WARNINGS} ${SBX_HARDEN_C})
  target_compile_definitions(${tgt} PRIVATE _GNU_SOURCE)
  target_link_options(${tgt} PRIVATE ${SBX_HARDEN_LD})
endfunction()
