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
#include <stdlib.h>
#include <string.h>

#include "dynbuf.h"
#include "plan.h"
#include "util.h"

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
    assert_true(parse_size("1.5G", &v) < 0);
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
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
