/* SPDX-License-Identifier: MIT */
/*
 * details.h: what a language really has where it runs (details.c): the
 * toolchain's version and the libraries importable without an install,
 * probed in a sandbox of the default backend once per toolchain.
 */
#ifndef SBX_RUNTIME_DETAILS_H
#define SBX_RUNTIME_DETAILS_H

struct sbx_runtime;
struct plugin;

/* Make pl's version and libraries those of the toolchain the default
 * backend runs now: kept while the toolchain is the same (the backend's
 * image by its ID; a local backend's binary and the directories the
 * libraries came from, by their stamps), read from the cache directory when
 * another runtime probed them, probed otherwise. A probe that fails leaves
 * them empty until the toolchain changes. Takes pl->probe_lock. */
void details_refresh(struct sbx_runtime *rt, struct plugin *pl);

#endif
