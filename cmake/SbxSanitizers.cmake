# SPDX-License-Identifier: MIT
# SBX_SANITIZE=address,undefined adds the sanitizers to every target except
# the static in-sandbox agent (a static binary cannot carry ASan's runtime).

if(SBX_SANITIZE)
  set(SBX_SAN_FLAGS -fsanitize=${SBX_SANITIZE} -fno-omit-frame-pointer
    -fno-sanitize-recover=all)
endif()

function(sbx_target_sanitize tgt)
  if(SBX_SANITIZE)
    target_compile_options(${tgt} PRIVATE ${SBX_SAN_FLAGS})
    target_link_options(${tgt} PRIVATE ${SBX_SAN_FLAGS})
  endif()
endfunction()
