/* SPDX-License-Identifier: MIT */
/*
 * agentc_files.c: file transfers through the agent (agent protocol PUT,
 * GET, LIST): staging inputs, fetching outputs and artifacts, listing the
 * workspace. The agent opens every path beneath the workspace without
 * following a link; the host never opens a path of the box itself.
 */
#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/util.h"
#include "channel/agentc.h"
#include "channel/agentc_int.h"
#include "proto.h"

int agentc_put(struct agentc *ac, const char *path, uint32_t mode, const void *data, size_t len,
        int64_t deadline_ms)
{
    return agentc_put_file(ac, path, mode, data, len, 0, deadline_ms);
}

int agentc_put_file(struct agentc *ac, const char *path, uint32_t mode, const void *data,
        size_t len, unsigned how, int64_t deadline_ms)
{
    size_t plen = strlen(path), off = 0;
    unsigned char head[8];
    int r;

    agent_put_u32(head, mode);
    agent_put_u32(head + 4, (uint32_t)plen);
    do {
        size_t n = len - off < AGENT_CHUNK ? len - off : AGENT_CHUNK;
        uint8_t flags = (uint8_t)((off == 0 ? AGENT_PUT_FIRST : 0) |
                                  (off == 0 && (how & AGENTC_PUT_REPLACE) ? AGENT_PUT_REPLACE : 0) |
                                  (off == 0 && (how & AGENTC_PUT_TMP) ? AGENT_PUT_TMP : 0) |
                                  (off + n == len ? AGENT_PUT_LAST : 0));
        struct dynbuf b;

        dynbuf_init(&b, AGENT_MAX_PAYLOAD);
        if (dynbuf_append(&b, head, 8) < 0 || dynbuf_append(&b, path, plen) < 0 ||
                agentc_queue_frame(
                        ac, AGENT_PUT, flags, b.buf, b.len, (const char *)data + off, n) < 0) {
            dynbuf_done(&b);
            return agentc_lost(ac, "%s", "cannot queue a file for the sandbox");
        }
        dynbuf_done(&b);
        off += n;
        /* Keep the queue short for big files: wait until it drained. */
        while (ac->wq.len > AGENT_CHUNK * 4) {
            if ((r = agentc_flush_some(ac)) != 0)
                return r;
            if (ac->wq.len > AGENT_CHUNK * 4) {
                struct pollfd pfd = {.fd = ac->ops->box_write_fd(ac->box), .events = POLLOUT};

                if (now_ms() >= deadline_ms)
                    return AGENTC_TIMEOUT;
                poll(&pfd, 1, 100);
            }
        }
    } while (off < len);
    r = agentc_next_reply(ac, deadline_ms);
    if (r != GOT_FRAME)
        return r;
    if (ac->hdr.type == AGENT_ERROR) {
        agentc_take_error(ac, path);
        return SBX_E_IO;
    }
    return ac->hdr.type == AGENT_OK ? 0
                                    : agentc_lost(ac, "%s", "unexpected reply to a file upload");
}

int agentc_get(struct agentc *ac, const char *path, size_t max, char **ret_data, size_t *ret_len,
        uint32_t *ret_mode, int64_t deadline_ms)
{
    unsigned char head[4];
    struct dynbuf b;
    int r;

    if (max > UINT32_MAX)
        max = UINT32_MAX;
    agent_put_u32(head, (uint32_t)max);
    if (agentc_queue_frame(ac, AGENT_GET, 0, head, 4, path, strlen(path)) < 0)
        return agentc_lost(ac, "%s", "cannot queue a file request");
    dynbuf_init(&b, max); /* the cap is the data's; the NUL comes on top */
    for (;;) {
        r = agentc_next_reply(ac, deadline_ms);
        if (r != GOT_FRAME) {
            dynbuf_done(&b);
            return r;
        }
        if (ac->hdr.type == AGENT_DATA) {
            if (dynbuf_append(&b, ac->payload, ac->hdr.len) < 0) {
                dynbuf_done(&b);
                return agentc_lost(ac, "%s", "the sandbox sent more than it was asked for");
            }
            continue;
        }
        if (ac->hdr.type == AGENT_ERROR) {
            dynbuf_done(&b);
            agentc_take_error(ac, path);
            return SBX_E_IO;
        }
        if (ac->hdr.type != AGENT_OK || ac->hdr.len != 4) {
            dynbuf_done(&b);
            return agentc_lost(ac, "%s", "unexpected reply to a file request");
        }
        *ret_mode = agent_get_u32(ac->payload);
        *ret_data = dynbuf_take(&b, ret_len);
        dynbuf_done(&b);
        return *ret_data ? 0 : SBX_E_NOMEM;
    }
}

/* The frame that ends a listing: OK (0), ERROR (SBX_E_IO), or anything
 * else (AGENTC_LOST). */
static int listing_end(struct agentc *ac, const char *path)
{
    if (ac->hdr.type == AGENT_ERROR) {
        agentc_take_error(ac, path);
        return SBX_E_IO;
    }
    return ac->hdr.type == AGENT_OK ? 0 : agentc_lost(ac, "%s", "unexpected reply to a listing");
}

int agentc_list(struct agentc *ac, const char *path, char ***ret_files, int64_t deadline_ms)
{
    char **files = NULL;
    int r;

    if (agentc_queue_frame(ac, AGENT_LIST, 0, path, strlen(path), NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue a directory request");
    for (;;) {
        r = agentc_next_reply(ac, deadline_ms);
        if (r != GOT_FRAME)
            break;
        if (ac->hdr.type == AGENT_DATA && ac->hdr.len > 0 && ac->payload[ac->hdr.len - 1] == '\0' &&
                strlen((const char *)ac->payload) == ac->hdr.len - 1) {
            if (strv_push(&files, (const char *)ac->payload) < 0) {
                r = SBX_E_NOMEM;
                break;
            }
            continue;
        }
        r = listing_end(ac, path);
        break;
    }
    if (r != 0) {
        strv_free(files);
        return r;
    }
    *ret_files = files ? files : calloc(1, sizeof(char *));
    return *ret_files ? 0 : SBX_E_NOMEM;
}

void agentc_entries_free(struct agentc_entry *e, size_t n)
{
    for (size_t i = 0; e && i < n; i++)
        free(e[i].path);
    free(e);
}

int agentc_list_stat(struct agentc *ac, const char *path, struct agentc_entry **ret, size_t *ret_n,
        int64_t deadline_ms)
{
    struct agentc_entry *e = NULL;
    size_t n = 0, cap = 0;
    int r;

    if (agentc_queue_frame(ac, AGENT_LIST, AGENT_LIST_STAT, path, strlen(path), NULL, 0) < 0)
        return agentc_lost(ac, "%s", "cannot queue a directory request");
    for (;;) {
        size_t plen;

        r = agentc_next_reply(ac, deadline_ms);
        if (r != GOT_FRAME)
            break;
        if (ac->hdr.type != AGENT_DATA) {
            r = listing_end(ac, path);
            break;
        }
        plen = strnlen((const char *)ac->payload, ac->hdr.len);
        if (ac->hdr.len < 18 || plen != ac->hdr.len - 17) {
            r = agentc_lost(ac, "%s", "the sandbox agent sent a malformed listing");
            break;
        }
        if (n == cap) {
            struct agentc_entry *m = realloc(e, (cap = cap ? cap * 2 : 16) * sizeof(*e));

            if (!m) {
                r = SBX_E_NOMEM;
                break;
            }
            e = m;
        }
        e[n].path = strdup((const char *)ac->payload);
        if (!e[n].path) {
            r = SBX_E_NOMEM;
            break;
        }
        e[n].size = agent_get_u64(ac->payload + plen + 1);
        e[n].mtime_ns = agent_get_u64(ac->payload + plen + 9);
        n++;
    }
    if (r != 0) {
        agentc_entries_free(e, n);
        return r;
    }
    *ret = e;
    *ret_n = n;
    return 0;
}
