/* SPDX-License-Identifier: MIT */
/*
 * test_util.c: number, size and duration parsing with overflow checks,
 * name grammars, UTF-8 repair, the capped buffer, and plan templates.
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/dynbuf.h"
#include "base/util.h"
#include "engine/plan.h"
#include "plugins/manifest.h"
#include "plugins/registry.h"
#include "runtime_state.h"

static void test_numbers(void **state)
{
    uint64_t v;

    (void)state;
    assert_int_equal(parse_u64("0", &v), 0);
    assert_int_equal(v, 0);
    assert_int_equal(parse_u64("18446744073709551615", &v), 0);
    assert_true(v == UINT64_MAX);
    assert_true(parse_u64("18446744073709551616", &v) < 0);
    assert_true(parse_u64("-1", &v) < 0);
    assert_true(parse_u64(" 1", &v) < 0);
    assert_true(parse_u64("1x", &v) < 0);
    assert_true(parse_u64("", &v) < 0);
    assert_true(parse_u64(NULL, &v) < 0);
}

static void test_sizes(void **state)
{
    uint64_t v;

    (void)state;
    assert_int_equal(parse_size("512", &v), 0), assert_int_equal(v, 512);
    assert_int_equal(parse_size("256M", &v), 0), assert_int_equal(v, 256u << 20);
    assert_int_equal(parse_size("1g", &v), 0), assert_int_equal(v, 1u << 30);
    assert_int_equal(parse_size("1GiB", &v), 0), assert_int_equal(v, 1u << 30);
    assert_int_equal(parse_size("4kb", &v), 0), assert_int_equal(v, 4096);
    assert_int_equal(parse_size("1.5G", &v), 0), assert_int_equal(v, 3u << 29);
    assert_int_equal(parse_size("0.25M", &v), 0), assert_int_equal(v, 256u << 10);
    assert_true(parse_size("1.5", &v) < 0);                        /* a fraction of a byte */
    assert_true(parse_size("1.2345G", &v) < 0);                    /* at most 3 decimals */
    assert_int_equal(parse_size("17179869184G", &v), SBX_E_LIMIT); /* 2^64: out of range */
    assert_true(parse_size("-1M", &v) < 0);
    assert_true(parse_size("1Q", &v) < 0);
    assert_true(parse_size("99999999999999999999T", &v) < 0);
    assert_true(parse_size("17179869184T", &v) < 0); /* overflows when shifted */
}

static void test_seconds(void **state)
{
    uint64_t v;

    (void)state;
    assert_int_equal(parse_seconds_ms("30", &v), 0), assert_int_equal(v, 30000);
    assert_int_equal(parse_seconds_ms("1.5", &v), 0), assert_int_equal(v, 1500);
    assert_int_equal(parse_seconds_ms("0.001", &v), 0), assert_int_equal(v, 1);
    assert_true(parse_seconds_ms("0.0001", &v) < 0);
    assert_true(parse_seconds_ms("-1", &v) < 0);
    assert_true(parse_seconds_ms("1.", &v) < 0);
    assert_true(parse_seconds_ms("1e3", &v) < 0);
    assert_int_equal(parse_millicores("0.25", &v), 0), assert_int_equal(v, 250);
}

static void test_names(void **state)
{
    (void)state;
    assert_true(name_is_valid("bwrap"));
    assert_true(name_is_valid("k8s_x"));
    assert_false(name_is_valid("Bwrap"));
    assert_false(name_is_valid("1abc"));
    assert_false(name_is_valid("a-b"));
    assert_false(name_is_valid("abcdefghijabcdefghijabcdefghijabc")); /* 33 */
    assert_true(env_key_is_valid("TZ"));
    assert_true(env_key_is_valid("_X1"));
    assert_false(env_key_is_valid("1X"));
    assert_false(env_key_is_valid("A=B"));
}

static void test_utf8(void **state)
{
    size_t n;
    char *s;

    (void)state;
    assert_true(utf8_is_valid("h\xc3\xa9llo \xf0\x9f\x98\x80", 11));
    assert_false(utf8_is_valid("\xc3", 1));         /* truncated */
    assert_false(utf8_is_valid("\xed\xa0\x80", 3)); /* surrogate */
    assert_false(utf8_is_valid("\xc0\xaf", 2));     /* overlong */
    s = utf8_sanitize("a\xff"
                      "b\xc3",
            4, &n);
    assert_int_equal(n, 8);
    assert_memory_equal(s,
            "a\xef\xbf\xbd"
            "b\xef\xbf\xbd",
            8);
    free(s);
}

static void test_dynbuf_cap(void **state)
{
    struct dynbuf b;

    (void)state;
    dynbuf_init(&b, 10);
    assert_int_equal(dynbuf_append(&b, "12345", 5), 0);
    assert_int_equal(dynbuf_append(&b, "67890", 5), 0);
    assert_int_equal(dynbuf_append(&b, "x", 1), SBX_E_LIMIT);
    assert_int_equal(b.len, 10);
    assert_string_equal(b.buf, "1234567890");
    dynbuf_done(&b);
}

static void test_plan_expand(void **state)
{
    struct sbx_plan p = {.source_name = (char *)"main.py"};
    char *vars[] = {(char *)"class=Main", NULL};
    struct sbx_error *e = NULL;
    char *out = NULL;

    (void)state;
    p.vars = vars;
    assert_int_equal(plan_expand(&p, "{workspace}/{source}", &out, &e), 0);
    assert_string_equal(out, "/workspace/main.py");
    free(out);
    assert_int_equal(plan_expand(&p, "-cp{class}.x", &out, &e), 0);
    assert_string_equal(out, "-cpMain.x");
    free(out);
    assert_true(plan_expand(&p, "{nope}", &out, &e) < 0);
    assert_non_null(strstr(e->msg, "unknown placeholder {nope}"));
    sbx_error_free(e);
}

/* A prepare hook that picks the mode named in the code ("mode:NAME"). */
static int pick_mode(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
        struct sbx_plan *plan, struct sbx_err *err)
{
    char name[32] = "";

    (void)state;
    (void)err;
    if (job->code_len > 5 && memcmp(job->code, "mode:", 5) == 0)
        snprintf(name, sizeof(name), "%.*s", (int)(job->code_len - 5), job->code + 5);
    if (strcmp(name, "named") == 0 && ops->set_source_name(plan, "Chosen.x") < 0)
        return SBX_E_INVALID;
    return name[0] ? ops->select_mode(plan, strcmp(name, "named") ? name : "test") : 0;
}

static void test_plan_modes(void **state)
{
    static const char yaml[] = "name: l\nkind: language\nversion: 1.0\nabi: 1.1\n"
                               "description: d\nlanguage:\n  source_file: main.x\n"
                               "  build: [cc, \"{source}\"]\n  run: [./a.out]\n"
                               "  modes:\n    test:\n      source_file: main_test.x\n"
                               "      run: [x, test, \"{source}\"]\n";
    static const struct sbx_language_ops lops = {.size = sizeof(lops), .prepare = pick_mode};
    static const struct sbx_plugin desc = {.language = &lops};
    struct plugin pl = {.name = (char *)"l", .desc = &desc};
    struct sbx_error *e = NULL;
    struct sbx_plan *p = NULL;

    (void)state;
    assert_int_equal(manifest_parse("/x/l.yaml", yaml, strlen(yaml), &pl.m, &e), 0);
    /* no mode: the language's build and run */
    assert_int_equal(plan_make(&pl, "x", 1, &p, &e), 0);
    assert_string_equal(p->source_name, "main.x");
    assert_string_equal(p->build[1], "main.x");
    assert_string_equal(p->run[0], "./a.out");
    plan_free(p);
    /* the test mode: its source file, no build, its run */
    assert_int_equal(plan_make(&pl, "mode:test", 9, &p, &e), 0);
    assert_string_equal(p->source_name, "main_test.x");
    assert_null(p->build);
    assert_string_equal(p->run[2], "main_test.x");
    plan_free(p);
    /* a name set by the hook wins over the mode's */
    assert_int_equal(plan_make(&pl, "mode:named", 10, &p, &e), 0);
    assert_string_equal(p->source_name, "Chosen.x");
    assert_string_equal(p->run[2], "Chosen.x");
    plan_free(p);
    /* a mode the manifest lacks is the plugin's error */
    assert_true(plan_make(&pl, "mode:nope", 9, &p, &e) < 0);
    assert_non_null(e);
    sbx_error_free(e);
    manifest_free(pl.m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_numbers),
            cmocka_unit_test(test_sizes),
            cmocka_unit_test(test_seconds),
            cmocka_unit_test(test_names),
            cmocka_unit_test(test_utf8),
            cmocka_unit_test(test_dynbuf_cap),
            cmocka_unit_test(test_plan_expand),
            cmocka_unit_test(test_plan_modes),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
