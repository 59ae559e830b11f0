/* SPDX-License-Identifier: MIT */
/*
 * test_wsl2_list.c: the WSL2 plugin's reading of wsl.exe's listings
 * (plugins/wsl2/wslist.c): UTF-16LE with and without a byte order mark,
 * UTF-8 under WSL_UTF8=1, surrogates, truncation, and the lookups in
 * `wsl.exe -l -q` and `-l -v` as Windows prints them (CRLF, '*' for the
 * default, a state of several words in other languages).
 */
/* clang-format off */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>
/* clang-format on */
#include <string.h>

#include "wslist.h"

/* s (ASCII) as wsl.exe writes it by default: UTF-16LE, no mark. */
static size_t utf16(const char *s, unsigned char *out, size_t cap)
{
    size_t n = 0;

    for (; *s && n + 2 <= cap; s++) {
        out[n++] = (unsigned char)*s;
        out[n++] = 0;
    }
    return n;
}

static void test_decode_utf16_without_mark(void **state)
{
    unsigned char raw[128];
    char text[128];
    size_t n = utf16("Debian\r\nsbx-wsl2-test\r\n", raw, sizeof(raw));

    (void)state;
    assert_int_equal(wsl_text_decode(raw, n, text, sizeof(text)), 23);
    assert_string_equal(text, "Debian\r\nsbx-wsl2-test\r\n");
}

static void test_decode_utf16_with_mark_and_padding(void **state)
{
    unsigned char raw[128] = {0xFF, 0xFE};
    char text[128];

    (void)state;
    utf16("Ubuntu\r\n", raw + 2, sizeof(raw) - 2);
    /* the probe hands over its whole zeroed buffer: the first NUL unit ends */
    assert_int_equal(wsl_text_decode(raw, sizeof(raw), text, sizeof(text)), 8);
    assert_string_equal(text, "Ubuntu\r\n");
}

static void test_decode_utf8(void **state)
{
    static const unsigned char raw[] = "Debian\r\nÜbung\r\n";
    char text[64];

    (void)state;
    assert_int_equal(wsl_text_decode(raw, sizeof(raw), text, sizeof(text)), sizeof(raw) - 1);
    assert_string_equal(text, "Debian\r\nÜbung\r\n");
}

static void test_decode_non_ascii_and_surrogates(void **state)
{
    /* "ü", U+1F600 as a surrogate pair, an unpaired high surrogate, "x" */
    static const unsigned char raw[] = {
            'a', 0, 0xFC, 0, 0x3D, 0xD8, 0x00, 0xDE, 0x00, 0xD8, 'x', 0, 0xDC, 0xDC};
    char text[64];

    (void)state;
    wsl_text_decode(raw, sizeof(raw), text, sizeof(text));
    /* the lone low surrogate at the end is replaced too */
    assert_string_equal(text, "a\xC3\xBC\xF0\x9F\x98\x80\xEF\xBF\xBDx\xEF\xBF\xBD");
}

static void test_decode_truncates_whole_characters(void **state)
{
    static const unsigned char raw[] = {'a', 0, 'b', 0, 0xAC, 0x20, 'c', 0}; /* ab€c */
    char text[5];

    (void)state;
    /* "€" takes 3 bytes and does not fit after "ab"; "c" does */
    assert_int_equal(wsl_text_decode(raw, sizeof(raw), text, sizeof(text)), 3);
    assert_string_equal(text, "abc");
    assert_int_equal(wsl_text_decode(raw, sizeof(raw), text, 1), 0);
    assert_string_equal(text, "");
    /* an odd last byte is no character */
    assert_int_equal(wsl_text_decode(raw, 3, text, sizeof(text)), 1);
}

static void test_list_has(void **state)
{
    const char *text = "Debian\r\n  sbx-wsl2-test \r\nlegacy-wsl1\r\n";

    (void)state;
    assert_true(wsl_list_has(text, "Debian"));
    assert_true(wsl_list_has(text, "sbx-wsl2-test"));
    assert_true(wsl_list_has(text, "legacy-wsl1"));
    assert_false(wsl_list_has(text, "sbx-wsl2")); /* no prefix */
    assert_false(wsl_list_has(text, "debian"));   /* names are exact */
    assert_false(wsl_list_has(text, ""));
    assert_false(wsl_list_has("", "Debian"));
}

static void test_list_names(void **state)
{
    char names[16];

    (void)state;
    wsl_list_names("Debian\r\n\r\nUbuntu\r\n", names, sizeof(names));
    assert_string_equal(names, "Debian, Ubuntu");
    wsl_list_names("Debian\r\nUbuntu-24.04\r\n", names, sizeof(names));
    assert_string_equal(names, "Debian, Ubuntu-"); /* cut to the buffer */
    wsl_list_names("", names, sizeof(names));
    assert_string_equal(names, "");
}

static void test_list_version(void **state)
{
    const char *text = "  NAME             STATE           VERSION\r\n"
                       "* Debian           Stopped         2\r\n"
                       "  sbx-wsl2-test    Running         2\r\n"
                       "  legacy-wsl1      Stopped         1\r\n";

    (void)state;
    assert_int_equal(wsl_list_version(text, "Debian"), 2);
    assert_int_equal(wsl_list_version(text, "sbx-wsl2-test"), 2);
    assert_int_equal(wsl_list_version(text, "legacy-wsl1"), 1);
    assert_int_equal(wsl_list_version(text, "sbx-wsl2"), 0);
    assert_int_equal(wsl_list_version(text, "NAME"), 0); /* the header is no row */
    assert_int_equal(wsl_list_version("", "Debian"), 0);
    assert_int_equal(
            wsl_list_version(
                    "Windows Subsystem for Linux has no installed distributions.\r\n", "Debian"),
            0);
}

static void test_list_version_other_languages_and_damage(void **state)
{
    (void)state;
    assert_int_equal(wsl_list_version("  NAME      STATUS              VERSION\r\n"
                                      "* Debian    Wird ausgeführt     2\r\n",
                             "Debian"),
            2);
    assert_int_equal(wsl_list_version("NAME STATE VERSION\r\n  Debian Running\r\n", "Debian"), -1);
    assert_int_equal(
            wsl_list_version("NAME STATE VERSION\r\n  Debian Running 3\r\n", "Debian"), -1);
    assert_int_equal(wsl_list_version("NAME STATE VERSION\r\n  Debian\r\n", "Debian"), -1);
}

/* The whole path the probe takes: UTF-16LE bytes to a version. */
static void test_decoded_listing(void **state)
{
    unsigned char raw[512];
    char text[256];
    size_t n = utf16(
            "  NAME      STATE      VERSION\r\n* Ubuntu    Running    2\r\n", raw, sizeof(raw));

    (void)state;
    wsl_text_decode(raw, n, text, sizeof(text));
    assert_int_equal(wsl_list_version(text, "Ubuntu"), 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
            cmocka_unit_test(test_decode_utf16_without_mark),
            cmocka_unit_test(test_decode_utf16_with_mark_and_padding),
            cmocka_unit_test(test_decode_utf8),
            cmocka_unit_test(test_decode_non_ascii_and_surrogates),
            cmocka_unit_test(test_decode_truncates_whole_characters),
            cmocka_unit_test(test_list_has),
            cmocka_unit_test(test_list_names),
            cmocka_unit_test(test_list_version),
            cmocka_unit_test(test_list_version_other_languages_and_damage),
            cmocka_unit_test(test_decoded_listing),
    };

    return cmocka_run_group_tests(tests, NULL, NULL);
}
