/* SPDX-License-Identifier: MIT */
/*
 * deps_check.c: the Windows build's first contract test (issue 28), run
 * under wine. Each of the four libraries scripts/build-windows.sh
 * cross-builds from Debian sources is loaded as a DLL and made to do the
 * work the core asks of it: json-c parses and prints, libyaml parses a
 * manifest-like document, libltdl opens a DLL of ours and calls into it,
 * libcurl reports Schannel as its TLS backend. Prints one "ok" line per
 * library and exits 0, or says what it saw and exits 1.
 */
#include <curl/curl.h>
#include <json-c/json.h>
#include <ltdl.h>
#include <stdio.h>
#include <string.h>
#include <yaml.h>

static int failures;

static void check(int ok, const char *what, const char *saw)
{
    printf("%s %s%s%s\n", ok ? "ok" : "FAIL", what, saw ? ": " : "", saw ? saw : "");
    if (!ok)
        failures++;
}

static void check_json(void)
{
    struct json_object *o = json_tokener_parse("{\"tools\":[1,\"two\",null]}");
    const char *s = o ? json_object_to_json_string_ext(o, JSON_C_TO_STRING_PLAIN) : "(no parse)";

    check(o && strcmp(s, "{\"tools\":[1,\"two\",null]}") == 0, "json-c round trip", s);
    json_object_put(o);
}

/* Counts the scalars of a small manifest: 3 keys, 4 values. */
static void check_yaml(void)
{
    static const char doc[] = "name: wsl2\nkind: backend\nlimits: [memory, pids]\n";
    yaml_parser_t p;
    yaml_event_t ev;
    int scalars = 0, done = 0, ok = 1;
    char saw[64];

    if (!yaml_parser_initialize(&p)) {
        check(0, "libyaml", "yaml_parser_initialize failed");
        return;
    }
    yaml_parser_set_input_string(&p, (const unsigned char *)doc, sizeof(doc) - 1);
    while (!done) {
        if (!yaml_parser_parse(&p, &ev)) {
            ok = 0;
            break;
        }
        scalars += ev.type == YAML_SCALAR_EVENT;
        done = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&p);
    snprintf(saw, sizeof(saw), "%d scalars, parse %s", scalars, ok ? "ok" : "failed");
    check(ok && scalars == 7, "libyaml parse", saw);
}

static void check_ltdl(void)
{
    lt_dlhandle h;
    int (*answer)(int);
    char saw[128];

    if (lt_dlinit() != 0) {
        check(0, "libltdl init", lt_dlerror());
        return;
    }
    h = lt_dlopenext("deps_check_plugin");
    if (!h) {
        check(0, "libltdl open deps_check_plugin", lt_dlerror());
        lt_dlexit();
        return;
    }
    *(void **)&answer = lt_dlsym(h, "sbx_deps_check_answer");
    snprintf(saw, sizeof(saw), "sbx_deps_check_answer(20) = %d", answer ? answer(20) : -1);
    check(answer && answer(20) == 41, "libltdl open and call a DLL", saw);
    lt_dlclose(h);
    lt_dlexit();
}

static void check_curl(void)
{
    const curl_version_info_data *v;

    if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK) {
        check(0, "libcurl init", NULL);
        return;
    }
    v = curl_version_info(CURLVERSION_NOW);
    check(v && v->ssl_version && strstr(v->ssl_version, "Schannel") &&
                    (v->features & CURL_VERSION_SSL),
            "libcurl with Schannel", v && v->ssl_version ? v->ssl_version : "(no TLS)");
    curl_global_cleanup();
}

int main(void)
{
    check_json();
    check_yaml();
    check_ltdl();
    check_curl();
    return failures ? 1 : 0;
}
