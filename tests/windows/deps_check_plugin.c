/* SPDX-License-Identifier: MIT */
/*
 * deps_check_plugin.c: a DLL for deps_check.c to open through libltdl, the
 * way the core opens its plugins. It exports one function and nothing else.
 */
__declspec(dllexport) int sbx_deps_check_answer(int x);

__declspec(dllexport) int sbx_deps_check_answer(int x)
{
    return x * 2 + 1;
}
