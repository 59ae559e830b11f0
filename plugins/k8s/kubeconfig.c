/* SPDX-License-Identifier: MIT */
/*
 * kubeconfig.c: the API server's address, TLS material and credentials,
 * from kubeconfig files (libyaml, read into json-c objects) or from the
 * in-cluster service account. Merging follows kubectl (client-go's
 * loader): files in KUBECONFIG order, the first to define a cluster, user
 * or context by name wins, the first current-context wins, missing files
 * are skipped, relative paths are relative to their file. Refused, with
 * the field named: exec and auth-provider credentials, basic auth,
 * proxy-url, tls-server-name, an http:// server, and
 * insecure-skip-tls-verify unless the operator said to ignore it (the core
 * always verifies the server). Files only; no network.
 */
#include "kubeconfig.h"

#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "k8s.h"

#define FILE_MAX  (1u << 20)
#define DEPTH_MAX 16

static char *dup0(const char *s)
{
    return s ? strdup(s) : NULL;
}

void k8s_cluster_done(struct k8s_cluster *c)
{
    char **f[] = {&c->endpoint, &c->prefix, &c->ca_pem, &c->ca_file, &c->cert_pem, &c->cert_file,
            &c->key_pem, &c->key_file, &c->token, &c->token_file, &c->ns, &c->source};

    for (size_t i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
        free(*f[i]);
        *f[i] = NULL;
    }
}

static int b64_value(int c)
{
    if (c >= 'A' && c <= 'Z')
        return c - 'A';
    if (c >= 'a' && c <= 'z')
        return c - 'a' + 26;
    if (c >= '0' && c <= '9')
        return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
}

char *k8s_b64_decode(const char *in, size_t *ret_len)
{
    size_t n = strlen(in), o = 0, pad = 0;
    char *out = malloc(n / 4 * 3 + 4);
    uint32_t acc = 0;
    unsigned bits = 0;

    for (size_t i = 0; out && i < n; i++) {
        int v = b64_value((unsigned char)in[i]);

        if (in[i] == '=') {
            pad++;
            continue;
        }
        if (strchr(" \t\r\n", in[i]))
            continue;
        if (v < 0 || pad) { /* a stray character, or data after padding */
            free(out);
            return NULL;
        }
        acc = (acc << 6) | (uint32_t)v;
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out[o++] = (char)((acc >> bits) & 0xFFu);
        }
    }
    if (out)
        out[o] = '\0';
    if (ret_len)
        *ret_len = o;
    return out;
}

/* ---- YAML into json-c ---------------------------------------------------- */

struct ytree {
    yaml_parser_t p;
    const char *path;
    struct sbx_err *err;
};

static struct json_object *y_node(struct ytree *y, yaml_event_t *ev, int depth);

static int y_fail(struct ytree *y, const char *what, const yaml_mark_t *m)
{
    return k8s_fail(y->err, SBX_E_INVALID, 0, "kubeconfig %s:%zu:%zu: %s", y->path,
            (size_t)m->line + 1, (size_t)m->column + 1, what);
}

static bool y_next(struct ytree *y, yaml_event_t *ev)
{
    if (yaml_parser_parse(&y->p, ev))
        return true;
    k8s_fail(y->err, SBX_E_INVALID, 0, "kubeconfig %s:%zu:%zu: %s", y->path,
            (size_t)y->p.problem_mark.line + 1, (size_t)y->p.problem_mark.column + 1,
            y->p.problem ? y->p.problem : "malformed YAML");
    return false;
}

/* The children of a mapping or sequence, up to its end event. */
static struct json_object *y_collection(struct ytree *y, bool map, int depth)
{
    struct json_object *o = map ? json_object_new_object() : json_object_new_array();

    for (;;) {
        yaml_event_t k, v;
        struct json_object *child;
        char *key = NULL;

        if (!y_next(y, &k))
            break;
        if (k.type == (map ? YAML_MAPPING_END_EVENT : YAML_SEQUENCE_END_EVENT)) {
            yaml_event_delete(&k);
            return o;
        }
        if (!map) {
            child = y_node(y, &k, depth + 1);
            yaml_event_delete(&k);
            if (!child)
                break;
            json_object_array_add(o, child);
            continue;
        }
        if (k.type != YAML_SCALAR_EVENT) {
            y_fail(y, "a mapping key must be a plain string", &k.start_mark);
            yaml_event_delete(&k);
            break;
        }
        key = strdup((const char *)k.data.scalar.value);
        yaml_event_delete(&k);
        if (!key || !y_next(y, &v)) {
            free(key);
            break;
        }
        child = y_node(y, &v, depth + 1);
        yaml_event_delete(&v);
        if (!child) {
            free(key);
            break;
        }
        json_object_object_add(o, key, child); /* a repeated key: the last, as kubectl */
        free(key);
    }
    json_object_put(o);
    return NULL;
}

/* One node from its first event (the caller deletes ev). */
static struct json_object *y_node(struct ytree *y, yaml_event_t *ev, int depth)
{
    if (depth > DEPTH_MAX) {
        y_fail(y, "nested too deeply", &ev->start_mark);
        return NULL;
    }
    switch (ev->type) {
    case YAML_SCALAR_EVENT:
        return json_object_new_string_len(
                (const char *)ev->data.scalar.value, (int)ev->data.scalar.length);
    case YAML_MAPPING_START_EVENT: return y_collection(y, true, depth);
    case YAML_SEQUENCE_START_EVENT: return y_collection(y, false, depth);
    case YAML_ALIAS_EVENT: y_fail(y, "aliases are not accepted", &ev->start_mark); return NULL;
    case YAML_NO_EVENT:
    case YAML_STREAM_START_EVENT:
    case YAML_STREAM_END_EVENT:
    case YAML_DOCUMENT_START_EVENT:
    case YAML_DOCUMENT_END_EVENT:
    case YAML_SEQUENCE_END_EVENT:
    case YAML_MAPPING_END_EVENT:
    default: y_fail(y, "unexpected YAML structure", &ev->start_mark); return NULL;
    }
}

/* The first document of a file as json-c (an empty file: an empty object). */
static int yaml_file(const char *path, struct json_object **ret, struct sbx_err *err)
{
    struct ytree y = {.path = path, .err = err};
    FILE *f = fopen(path, "re");
    struct json_object *o = NULL;
    bool failed = false;
    long size;

    if (!f)
        return k8s_fail(err, errno == ENOENT ? SBX_E_UNAVAILABLE : SBX_E_INVALID, errno,
                "kubeconfig %s: %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0 || (size = ftell(f)) < 0 || (size_t)size > FILE_MAX ||
            fseek(f, 0, SEEK_SET) != 0) {
        fclose(f);
        return k8s_fail(err, SBX_E_INVALID, 0, "kubeconfig %s: unreadable or over %u bytes", path,
                FILE_MAX);
    }
    yaml_parser_initialize(&y.p);
    yaml_parser_set_input_file(&y.p, f);
    while (!o && !failed) {
        yaml_event_t ev;
        yaml_event_type_t type;

        if (!y_next(&y, &ev)) {
            failed = true;
            break;
        }
        type = ev.type;
        if (type == YAML_MAPPING_START_EVENT) {
            o = y_collection(&y, true, 0);
            failed = !o;
        } else if (type == YAML_STREAM_END_EVENT) { /* empty: nothing in it */
            o = json_object_new_object();
        } else if (type == YAML_SCALAR_EVENT || type == YAML_SEQUENCE_START_EVENT) {
            y_fail(&y, "the top level must be a mapping", &ev.start_mark);
            failed = true;
        }
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&y.p);
    fclose(f);
    if (failed)
        return err->rc;
    *ret = o;
    return 0;
}

/* ---- merging --------------------------------------------------------------- */

/* Named entries (clusters, users, contexts) of every file, first wins;
 * each kept as {"dir": the file's directory, "v": the entry}. */
struct merged {
    struct json_object *clusters, *users, *contexts;
    char *current;
};

static void merge_list(struct json_object *file, const char *key, const char *inner,
        const char *dir, struct json_object *into)
{
    struct json_object *list, *e, *name, *v;

    if (!json_object_object_get_ex(file, key, &list) || !json_object_is_type(list, json_type_array))
        return;
    for (size_t i = 0; i < json_object_array_length(list); i++) {
        e = json_object_array_get_idx(list, i);
        if (!json_object_object_get_ex(e, "name", &name) ||
                json_object_object_get_ex(into, json_object_get_string(name), NULL))
            continue;
        struct json_object *w = json_object_new_object();
        json_object_object_add(w, "dir", json_object_new_string(dir));
        if (json_object_object_get_ex(e, inner, &v))
            json_object_object_add(w, "v", json_object_get(v));
        json_object_object_add(into, json_object_get_string(name), w);
    }
}

static int merge_file(struct merged *m, const char *path, struct sbx_err *err)
{
    struct json_object *f = NULL, *cur;
    char dir[4096];
    const char *slash = strrchr(path, '/');
    int r = yaml_file(path, &f, err);

    if (r < 0)
        return r;
    snprintf(dir, sizeof(dir), "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    merge_list(f, "clusters", "cluster", dir, m->clusters);
    merge_list(f, "users", "user", dir, m->users);
    merge_list(f, "contexts", "context", dir, m->contexts);
    if (!m->current && json_object_object_get_ex(f, "current-context", &cur) &&
            json_object_get_string_len(cur) > 0)
        m->current = strdup(json_object_get_string(cur));
    json_object_put(f);
    return 0;
}

static const char *field(struct json_object *o, const char *key)
{
    struct json_object *v;

    return json_object_object_get_ex(o, key, &v) && json_object_is_type(v, json_type_string)
                   ? json_object_get_string(v)
                   : NULL;
}

/* A path from the file, made absolute against its directory. */
static char *resolve(const char *dir, const char *p)
{
    char *out = NULL;

    if (!p || !*p)
        return NULL;
    if (p[0] == '/')
        return strdup(p);
    if (asprintf(&out, "%s/%s", dir, p) < 0)
        return NULL;
    return out;
}

/* data (base64 PEM) wins over the file, as in kubectl. */
static int material(struct json_object *o, const char *dir, const char *key, char **ret_pem,
        char **ret_file, struct sbx_err *err)
{
    char dkey[64];
    const char *data;

    snprintf(dkey, sizeof(dkey), "%s-data", key);
    data = field(o, dkey);
    if (data && *data) {
        *ret_pem = k8s_b64_decode(data, NULL);
        if (!*ret_pem)
            return k8s_fail(err, SBX_E_INVALID, 0, "kubeconfig: %s is not valid base64", dkey);
        return 0;
    }
    *ret_file = resolve(dir, field(o, key));
    return 0;
}

static int url_split(struct k8s_cluster *c, const char *server, struct sbx_err *err)
{
    const char *host, *path;

    if (!server || strncmp(server, "https://", 8) != 0)
        return k8s_fail(err, SBX_E_INVALID, 0,
                "kubeconfig: the cluster's server '%s' must be an https:// URL",
                server ? server : "");
    host = server + 8;
    path = strchr(host, '/');
    c->endpoint = path ? strndup(server, (size_t)(path - server)) : strdup(server);
    c->prefix = strdup(path ? path : "");
    if (c->prefix && strlen(c->prefix) > 0 && c->prefix[strlen(c->prefix) - 1] == '/')
        c->prefix[strlen(c->prefix) - 1] = '\0';
    return c->endpoint && c->prefix ? 0 : k8s_fail(err, SBX_E_NOMEM, ENOMEM, "out of memory");
}

static int take_cluster(
        struct k8s_cluster *c, struct json_object *w, bool ignore_insecure, struct sbx_err *err)
{
    struct json_object *v = NULL, *dirv;
    const char *dir, *insecure;
    static const char *const refused[] = {"proxy-url", "tls-server-name"};

    json_object_object_get_ex(w, "v", &v);
    json_object_object_get_ex(w, "dir", &dirv);
    dir = json_object_get_string(dirv);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (field(v, refused[i]))
            return k8s_fail(err, SBX_E_INVALID, 0,
                    "kubeconfig: the cluster's %s is not supported; reach the API server "
                    "directly",
                    refused[i]);
    insecure = field(v, "insecure-skip-tls-verify");
    if (insecure && strcmp(insecure, "true") == 0 && !ignore_insecure)
        return k8s_fail(err, SBX_E_INVALID, 0,
                "kubeconfig: the cluster is marked insecure-skip-tls-verify, which this backend "
                "refuses; give certificate-authority(-data), or set "
                "LLM_SANDBOX_KUBERNETES_IGNORE_INSECURE=true to verify the server anyway");
    if (url_split(c, field(v, "server"), err) < 0)
        return err->rc;
    return material(v, dir, "certificate-authority", &c->ca_pem, &c->ca_file, err);
}

static int take_user(struct k8s_cluster *c, struct json_object *w, struct sbx_err *err)
{
    struct json_object *v = NULL, *dirv;
    const char *dir;
    static const char *const refused[] = {"exec", "auth-provider", "username", "password"};

    json_object_object_get_ex(w, "v", &v);
    json_object_object_get_ex(w, "dir", &dirv);
    dir = json_object_get_string(dirv);
    for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++)
        if (json_object_object_get_ex(v, refused[i], NULL))
            return k8s_fail(err, SBX_E_INVALID, 0,
                    "kubeconfig: the user's '%s' credentials are not supported; use a client "
                    "certificate or a bearer token (token, tokenFile)",
                    refused[i]);
    if (material(v, dir, "client-certificate", &c->cert_pem, &c->cert_file, err) < 0 ||
            material(v, dir, "client-key", &c->key_pem, &c->key_file, err) < 0)
        return err->rc;
    c->token = dup0(field(v, "token"));
    if (!c->token)
        c->token_file = resolve(dir, field(v, "tokenFile"));
    return 0;
}

static int pick(struct merged *m, const char *context, bool ignore_insecure, struct k8s_cluster *c,
        struct sbx_err *err)
{
    struct json_object *ctxw, *ctx = NULL, *cw, *uw;
    const char *name = context ? context : m->current, *cl, *user;

    if (!name)
        return k8s_fail(err, SBX_E_INVALID, 0,
                "kubeconfig has no current-context; set one or LLM_SANDBOX_KUBERNETES_CONTEXT");
    if (!json_object_object_get_ex(m->contexts, name, &ctxw))
        return k8s_fail(err, SBX_E_INVALID, 0, "kubeconfig has no context '%s'", name);
    json_object_object_get_ex(ctxw, "v", &ctx);
    cl = field(ctx, "cluster");
    user = field(ctx, "user");
    if (!cl || !json_object_object_get_ex(m->clusters, cl, &cw))
        return k8s_fail(
                err, SBX_E_INVALID, 0, "kubeconfig: context '%s' names no known cluster", name);
    if (take_cluster(c, cw, ignore_insecure, err) < 0)
        return err->rc;
    if (user && json_object_object_get_ex(m->users, user, &uw) && take_user(c, uw, err) < 0)
        return err->rc;
    c->ns = dup0(field(ctx, "namespace"));
    if (asprintf(&c->source, "kubeconfig context '%s'", name) < 0)
        c->source = NULL;
    return 0;
}

int k8s_kubeconfig_merge(const char *list, const char *context, bool ignore_insecure,
        struct k8s_cluster *ret, struct sbx_err *err)
{
    struct merged m = {.clusters = json_object_new_object(),
            .users = json_object_new_object(),
            .contexts = json_object_new_object()};
    struct k8s_cluster c = {0};
    char *copy = strdup(list), *save = NULL;
    size_t found = 0;
    int r = 0;

    for (char *p = copy ? strtok_r(copy, ":", &save) : NULL; p && r == 0;
            p = strtok_r(NULL, ":", &save)) {
        r = merge_file(&m, p, err);
        if (r == SBX_E_UNAVAILABLE) { /* a missing file in the list is skipped */
            err->rc = 0;
            r = 0;
        } else if (r == 0) {
            found++;
        }
    }
    if (r == 0 && found == 0)
        r = k8s_fail(err, SBX_E_UNAVAILABLE, 0, "no kubeconfig file of '%s' exists", list);
    if (r == 0)
        r = pick(&m, context, ignore_insecure, &c, err);
    free(copy);
    free(m.current);
    json_object_put(m.clusters);
    json_object_put(m.users);
    json_object_put(m.contexts);
    if (r < 0) {
        k8s_cluster_done(&c);
        return r;
    }
    *ret = c;
    return 0;
}

static char *read_small(const char *path)
{
    FILE *f = fopen(path, "re");
    char buf[256];
    size_t n;

    if (!f)
        return NULL;
    n = fread(buf, 1, sizeof(buf) - 1, f);
    fclose(f);
    while (n > 0 && strchr(" \t\r\n", buf[n - 1]))
        n--;
    buf[n] = '\0';
    return n ? strdup(buf) : NULL;
}

static int in_cluster(const struct k8s_config_opts *o, struct k8s_cluster *c, struct sbx_err *err)
{
    const char *port = o->service_port && *o->service_port ? o->service_port : "443";
    bool v6 = strchr(o->service_host, ':') != NULL;
    char path[4096];

    if (asprintf(&c->endpoint, "https://%s%s%s:%s", v6 ? "[" : "", o->service_host, v6 ? "]" : "",
                port) < 0)
        c->endpoint = NULL;
    c->prefix = strdup("");
    snprintf(path, sizeof(path), "%s/ca.crt", o->sa_dir);
    c->ca_file = strdup(path);
    snprintf(path, sizeof(path), "%s/token", o->sa_dir);
    c->token_file = strdup(path);
    snprintf(path, sizeof(path), "%s/namespace", o->sa_dir);
    c->ns = read_small(path);
    c->source = strdup("in-cluster service account");
    if (!c->endpoint || !c->prefix || !c->ca_file || !c->token_file || !c->source)
        return k8s_fail(err, SBX_E_NOMEM, ENOMEM, "out of memory");
    return 0;
}

int k8s_config_load(const struct k8s_config_opts *o, struct k8s_cluster *ret, struct sbx_err *err)
{
    struct k8s_cluster c = {0};
    int r;

    if (o->kubeconfig && *o->kubeconfig)
        return k8s_kubeconfig_merge(o->kubeconfig, o->context, o->ignore_insecure, ret, err);
    if (o->service_host && *o->service_host) {
        r = in_cluster(o, &c, err);
        if (r < 0) {
            k8s_cluster_done(&c);
            return r;
        }
        *ret = c;
        return 0;
    }
    if (o->home_kubeconfig) {
        r = k8s_kubeconfig_merge(o->home_kubeconfig, o->context, o->ignore_insecure, ret, err);
        if (r != SBX_E_UNAVAILABLE)
            return r;
    }
    return k8s_fail(err, SBX_E_UNAVAILABLE, 0,
            "no Kubernetes cluster is configured: set KUBECONFIG, run in a cluster "
            "(KUBERNETES_SERVICE_HOST), or provide %s",
            o->home_kubeconfig ? o->home_kubeconfig : "~/.kube/config");
}
