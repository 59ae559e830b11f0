# SPDX-License-Identifier: MIT
# cmake -DIN=file -DOUT=file.c -P embed.cmake: write IN as a NUL-terminated
# char array (seccomp_policy_list), so the one policy list ships inside the
# binary. An array, not a string literal: C limits literals to 4095 bytes.
file(READ "${IN}" hex HEX)
string(REGEX REPLACE "([0-9a-f][0-9a-f])" "0x\\1," hex "${hex}")
string(REGEX REPLACE "((0x..,){16})" "\\1\n    " hex "${hex}")
file(WRITE "${OUT}" "/* Generated from policy.list by cmake/embed.cmake; do not edit. */\n"
  "extern const char seccomp_policy_list[];\n"
  "const char seccomp_policy_list[] = {\n    ${hex}0x00};\n")
