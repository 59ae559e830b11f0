/* SPDX-License-Identifier: MIT */
/*
 * dlib.c: open a library on first use and resolve its symbols (dlib.h).
 */
#include "dlib.h"

#include <dlfcn.h>
#include <stdio.h>

int dlib_open(struct dlib *lib)
{
    void *h;

    pthread_mutex_lock(&lib->lock);
    if (lib->state != 0)
        goto out;
    h = dlopen(lib->soname, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    if (!h) {
        const char *e = dlerror();

        snprintf(lib->error, sizeof(lib->error), "%s needs %s, which cannot be loaded: %s",
                lib->why, lib->soname, e ? e : "unknown error");
        lib->state = -1;
        goto out;
    }
    for (size_t i = 0; i < lib->n_syms; i++) {
        void *p = dlsym(h, lib->syms[i].name);

        if (!p) {
            snprintf(lib->error, sizeof(lib->error), "%s needs %s, which lacks %s", lib->why,
                    lib->soname, lib->syms[i].name);
            for (size_t j = 0; j < i; j++)
                *lib->syms[j].fn = NULL;
            dlclose(h);
            lib->state = -1;
            goto out;
        }
        *lib->syms[i].fn = p;
    }
    lib->state = 1;
out:
    pthread_mutex_unlock(&lib->lock);
    return lib->state == 1 ? 0 : -1;
}
