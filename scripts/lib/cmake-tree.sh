# SPDX-License-Identifier: MIT
# shellcheck shell=sh
#
# cmake-tree.sh: the generator option for a build tree, for the scripts
# that configure one (scripts/test.sh, scripts/vm-test.sh). Sourced, not
# run.
#
# cmake_generator DIR: "-G Ninja" for a tree not configured yet; nothing
# for one configured before, which keeps its own generator. The
# Quickstart's first command makes build/ with CMake's default, and CMake
# refuses to switch a tree's generator.
cmake_generator() {
    [ -f "$1/CMakeCache.txt" ] || echo "-G Ninja"
}
