/* SPDX-License-Identifier: MIT */
/*
 * java.c: what the java manifest cannot say. prepare: javac wants a public
 * class in a file of its name, and java the class to run with its package:
 * the source is named after the first public top-level class (else the
 * first class declaring main, else the first class), and {class} is that
 * class, qualified by the package declaration if there is one. The scan
 * does not parse Java: a name found in a comment or string costs a compiler
 * error, never anything worse (the name is an identifier either way).
 * check_library: Maven coordinates group:artifact:version (also with a
 * packaging or classifier: group:artifact:packaging[:classifier]:version).
 * prepare_install: a pom.xml depending on them and Maven settings naming
 * the install proxy, for `mvn dependency:copy-dependencies`.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "langkit.h"

#define WHAT "Maven coordinate (group:artifact:version)"

/* The class after the first "class" keyword at or after from (skipping
 * "class" used as in Foo.class), copied into out; its position or len. */
static size_t next_class(const char *code, size_t len, size_t from, char *out, size_t out_len)
{
    for (size_t i = lang_find_word(code, len, from, "class"); i < len;
            i = lang_find_word(code, len, i + 5, "class")) {
        size_t j = lang_skip_space(code, len, i + 5);

        if (i > 0 && code[i - 1] == '.')
            continue;
        if (lang_ident(code, len, j, out, out_len))
            return i;
    }
    return len;
}

/* Is "public" the last word before position i (modifiers between allowed)? */
static bool is_public(const char *code, size_t i)
{
    static const char *const mods[] = {"final ", "abstract ", "strictfp ", "sealed "};
    size_t k = i;
    bool moved = true;

    while (moved) {
        moved = false;
        while (k > 0 && (code[k - 1] == ' ' || code[k - 1] == '\t' || code[k - 1] == '\n'))
            k--;
        for (size_t m = 0; m < sizeof(mods) / sizeof(mods[0]); m++) {
            size_t ml = strlen(mods[m]) - 1;

            if (k >= ml && memcmp(code + k - ml, mods[m], ml) == 0) {
                k -= ml;
                moved = true;
            }
        }
    }
    return k >= 6 && memcmp(code + k - 6, "public", 6) == 0 &&
           (k == 6 || !lang_ident_char(code[k - 7]));
}

static void main_class(const char *code, size_t len, char *out, size_t out_len)
{
    char name[128], first[128] = "", with_main[128] = "";
    size_t main_at = lang_find_word(code, len, 0, "main");

    for (size_t i = next_class(code, len, 0, name, sizeof(name)); i < len;
            i = next_class(code, len, i + 5, name, sizeof(name))) {
        if (is_public(code, i)) {
            snprintf(out, out_len, "%s", name);
            return;
        }
        if (!first[0])
            snprintf(first, sizeof(first), "%s", name);
        if (i < main_at)
            snprintf(with_main, sizeof(with_main), "%s", name);
    }
    snprintf(out, out_len, "%s", with_main[0] ? with_main : first[0] ? first : "Main");
}

/* "package a.b.c;" -> "a.b.c", or "" */
static void package_of(const char *code, size_t len, char *out, size_t out_len)
{
    size_t i = lang_find_word(code, len, 0, "package"), j, n;

    out[0] = '\0';
    if (i == len)
        return;
    j = lang_skip_space(code, len, i + 7);
    for (n = 0; j + n < len && (lang_ident_char(code[j + n]) || code[j + n] == '.'); n++)
        ;
    if (n == 0 || n >= out_len)
        return;
    j = lang_skip_space(code, len, j + n);
    if (j < len && code[j] == ';') {
        memcpy(out, code + lang_skip_space(code, len, i + 7), n);
        out[n] = '\0';
    }
}

static int java_prepare(void *state, const struct sbx_lang_job *job, const struct sbx_plan_ops *ops,
        struct sbx_plan *plan, struct sbx_err *err)
{
    char cls[128], pkg[256], file[160], qualified[400];

    (void)state;
    main_class(job->code, job->code_len, cls, sizeof(cls));
    package_of(job->code, job->code_len, pkg, sizeof(pkg));
    snprintf(file, sizeof(file), "%s.java", cls);
    snprintf(qualified, sizeof(qualified), "%s%s%s", pkg, pkg[0] ? "." : "", cls);
    if (ops->set_source_name(plan, file) < 0 || ops->set_var(plan, "class", qualified) < 0) {
        err->rc = SBX_E_INVALID;
        snprintf(err->msg, sizeof(err->msg), "cannot name the source after class '%s'", cls);
        return SBX_E_INVALID;
    }
    return 0;
}

static int java_check_library(void *state, const char *spec, struct sbx_err *err)
{
    const char *p = spec;
    int parts = 0;

    (void)state;
    if (strlen(spec) > LANG_LIBRARY_MAX)
        return lang_refuse(err, WHAT, spec, "too long");
    for (;;) {
        size_t n = lang_span(p, ".-_");

        if (n == 0 || p[0] == '.' || p[0] == '-')
            return lang_refuse(err, WHAT, spec, "each part is letters, digits and .-_");
        parts++;
        p += n;
        if (*p == '\0')
            break;
        if (*p != ':')
            return lang_refuse(err, WHAT, spec, "parts are separated by ':'");
        p++;
    }
    if (parts < 3 || parts > 5)
        return lang_refuse(err, WHAT, spec, "it has 3 to 5 parts, the version last");
    return 0;
}

/* Maven settings: its own proxy configuration (it ignores HTTPS_PROXY),
 * pointing at the sandbox agent's relay to the core's proxy. */
static const char settings_xml[] =
        "<settings xmlns=\"http://maven.apache.org/SETTINGS/1.0.0\">\n"
        "  <offline>false</offline>\n"
        "  <interactiveMode>false</interactiveMode>\n"
        "  <proxies>\n"
        "    <proxy><id>llm-sandbox</id><active>true</active><protocol>https</protocol>\n"
        "      <host>127.0.0.1</host><port>3128</port></proxy>\n"
        "  </proxies>\n"
        "</settings>\n";

/* One <dependency> from a checked coordinate: g:a:v, g:a:packaging:v or
 * g:a:packaging:classifier:v (letters, digits and .-_ only: nothing in
 * them needs escaping in XML). */
static int add_dependency(char *out, size_t len, size_t *used, const char *spec)
{
    char part[5][LANG_LIBRARY_MAX + 1];
    const char *p = spec;
    size_t n = 0;
    int w;

    while (n < 5) {
        size_t k = strcspn(p, ":");

        snprintf(part[n++], sizeof(part[0]), "%.*s", (int)k, p);
        if (p[k] == '\0')
            break;
        p += k + 1;
    }
    if (n < 3)
        return SBX_E_INVALID;
    w = snprintf(out + *used, len - *used,
            "    <dependency><groupId>%s</groupId><artifactId>%s</artifactId>"
            "<version>%s</version>",
            part[0], part[1], part[n - 1]);
    if (w > 0 && (size_t)w < len - *used && n >= 4)
        w += snprintf(out + *used + (size_t)w, len - *used - (size_t)w, "<type>%s</type>%s%s%s",
                part[2], n == 5 ? "<classifier>" : "", n == 5 ? part[3] : "",
                n == 5 ? "</classifier>" : "");
    if (w > 0 && (size_t)w < len - *used)
        w += snprintf(out + *used + (size_t)w, len - *used - (size_t)w, "</dependency>\n");
    if (w < 0 || (size_t)w >= len - *used)
        return SBX_E_LIMIT;
    *used += (size_t)w;
    return 0;
}

/* A pom.xml whose dependencies are the libraries, and Maven's settings,
 * for the manifest's `mvn dependency:copy-dependencies`. */
static int java_prepare_install(void *state, const char *const *libs, size_t n,
        const struct sbx_install_ops *ops, struct sbx_install *inst, struct sbx_err *err)
{
    const size_t cap = 256 * 1024; /* a heap buffer: installs may run on several threads */
    char *pom = malloc(cap);
    size_t used = 0;
    int w, rc = 0;

    (void)state;
    if (!pom)
        return SBX_E_NOMEM;
    w = snprintf(pom, cap,
            "<project xmlns=\"http://maven.apache.org/POM/4.0.0\">\n"
            "  <modelVersion>4.0.0</modelVersion>\n"
            "  <groupId>llm-sandbox</groupId><artifactId>libraries</artifactId>"
            "<version>1</version>\n"
            "  <dependencies>\n");
    used = (size_t)w;
    for (size_t i = 0; rc == 0 && i < n; i++)
        rc = add_dependency(pom, cap, &used, libs[i]);
    if (rc == 0) {
        w = snprintf(pom + used, cap - used, "  </dependencies>\n</project>\n");
        rc = w > 0 && (size_t)w < cap - used ? 0 : SBX_E_LIMIT;
        used += rc == 0 ? (size_t)w : 0;
    }
    if (rc == 0)
        rc = ops->add_file(inst, "pom.xml", pom, used);
    free(pom);
    if (rc == 0)
        rc = ops->add_file(inst, "settings.xml", settings_xml, sizeof(settings_xml) - 1);
    if (rc < 0) {
        err->rc = rc;
        snprintf(err->field, sizeof(err->field), "libraries");
        snprintf(err->msg, sizeof(err->msg), "cannot write the Maven project for %zu libraries", n);
    }
    return rc;
}

static const struct sbx_language_ops ops = {
        .size = sizeof(struct sbx_language_ops),
        .check_library = java_check_library,
        .prepare = java_prepare,
        .prepare_install = java_prepare_install,
};

static const struct sbx_plugin descriptor = {
        .abi_major = SBX_ABI_MAJOR,
        .abi_minor = 2, /* prepare_install */
        .size = sizeof(struct sbx_plugin),
        .kind = SBX_KIND_LANGUAGE,
        .name = "java",
        .version = "0.1.0",
        .language = &ops,
};

SBX_PLUGIN_ENTRY
{
    return &descriptor;
}
