/* SPDX-License-Identifier: MIT */
/*
 * cleanup.h: scope-bound ownership (STYLE O1), crun's spelling.
 * A local declared `cleanup_free char *p = NULL;` is freed when it goes out
 * of scope; steal_ptr()/steal_fd() hand ownership on. Destructors accept
 * NULL and -1.
 */
#ifndef SBX_CLEANUP_H
#define SBX_CLEANUP_H

#include <dirent.h>
#include <json-c/json_object.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/error.h"

static inline void cleanup_freep(void *p)
{
    void *q;

    memcpy(&q, p, sizeof(q));
    free(q);
}

static inline void cleanup_closep(const int *fd)
{
    if (*fd >= 0)
        close(*fd);
}

static inline void cleanup_fclosep(FILE **f)
{
    if (*f)
        fclose(*f);
}

static inline void cleanup_closedirp(DIR **d)
{
    if (*d)
        closedir(*d);
}

static inline void cleanup_jsonp(struct json_object **j)
{
    if (*j)
        json_object_put(*j);
}

static inline void cleanup_errorp(struct sbx_error **e)
{
    sbx_error_free(*e);
}

static inline void cleanup_strvp(char ***v)
{
    if (*v) {
        for (char **s = *v; *s; s++)
            free(*s);
        free(*v);
    }
}

#define cleanup_free   __attribute__((cleanup(cleanup_freep)))
#define cleanup_close  __attribute__((cleanup(cleanup_closep)))
#define cleanup_fclose __attribute__((cleanup(cleanup_fclosep)))
#define cleanup_dir    __attribute__((cleanup(cleanup_closedirp)))
#define cleanup_json   __attribute__((cleanup(cleanup_jsonp)))
#define cleanup_error  __attribute__((cleanup(cleanup_errorp)))
#define cleanup_strv   __attribute__((cleanup(cleanup_strvp)))

static inline void *steal_ptr_impl(void *pp)
{
    void *r, *null = NULL;

    memcpy(&r, pp, sizeof(r));
    memcpy(pp, &null, sizeof(null));
    return r;
}
#define steal_ptr(pp) ((__typeof__(*(pp)))steal_ptr_impl(pp))

static inline int steal_fd(int *fd)
{
    int r = *fd;

    *fd = -1;
    return r;
}

#endif
