/* SPDX-License-Identifier: MIT */
/*
 * minire.c: see minire.h. The pattern is compiled into a short list of
 * nodes (an atom with its quantifier, a group's edge, an anchor), then
 * searched from each start position by exhaustive backtracking that keeps
 * the longest match, under a budget of steps.
 */
#include "platform/minire.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#define MAX_NODES   MINIRE_MAX_LEN
#define STEP_BUDGET 2000000L

enum node_type { N_CHAR, N_ANY, N_SET, N_OPEN, N_CLOSE, N_BOL, N_EOL };
enum quant { Q_ONE, Q_STAR, Q_PLUS, Q_OPT };

struct node {
    enum node_type type;
    enum quant q;
    unsigned char c;
    unsigned group;
    uint8_t set[32]; /* N_SET: a bit per byte value */
};

struct prog {
    struct node n[MAX_NODES];
    size_t len;
    size_t groups;
};

static bool is_alnum(unsigned char c)
{
    return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static void set_add(uint8_t *set, unsigned char c)
{
    set[c >> 3] = (uint8_t)(set[c >> 3] | (1u << (c & 7)));
}

/* A bracket expression from p (just past '['): its end, or NULL. */
static const char *parse_set(const char *p, struct node *nd, const char **why)
{
    bool neg = false;

    memset(nd->set, 0, sizeof(nd->set));
    nd->type = N_SET;
    if (*p == '^')
        neg = true, p++;
    if (*p == ']')
        set_add(nd->set, ']'), p++;
    while (*p && *p != ']') {
        unsigned char lo = (unsigned char)*p, hi = lo;

        if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) {
            *why = "character classes and collating elements ([:...:]) are outside the subset";
            return NULL;
        }
        if (p[1] == '-' && p[2] && p[2] != ']') {
            hi = (unsigned char)p[2];
            p += 2;
            if (hi < lo) {
                *why = "a range in a bracket expression runs backwards";
                return NULL;
            }
        }
        for (unsigned c = lo; c <= hi; c++)
            set_add(nd->set, (unsigned char)c);
        p++;
    }
    if (*p != ']') {
        *why = "a bracket expression is not closed";
        return NULL;
    }
    if (neg)
        for (size_t i = 0; i < sizeof(nd->set); i++)
            nd->set[i] = (uint8_t)~nd->set[i];
    return p + 1; /* (a NUL is never taken: the text ends there) */
}

static const char *compile(const char *pat, struct prog *pr)
{
    const char *p = pat, *why = NULL;
    bool in_group = false;

    if (strlen(pat) > MINIRE_MAX_LEN)
        return "a pattern longer than 256 bytes is outside the subset";
    pr->len = pr->groups = 0;
    while (*p) {
        struct node *nd = &pr->n[pr->len];
        bool atom = true;

        memset(nd, 0, sizeof(*nd));
        switch (*p) {
        case '|': return "alternation (|) is outside the subset";
        case '{': return "intervals ({m,n}) are outside the subset";
        case '*':
        case '+':
        case '?': return "a quantifier with nothing to repeat is outside the subset";
        case '^':
            if (p != pat)
                return "'^' other than first is outside the subset";
            nd->type = N_BOL, atom = false, p++;
            break;
        case '$':
            if (p[1])
                return "'$' other than last is outside the subset";
            nd->type = N_EOL, atom = false, p++;
            break;
        case '(':
            if (in_group)
                return "nested groups are outside the subset";
            if (pr->groups == MINIRE_MAX_GROUPS)
                return "more than 9 groups are outside the subset";
            in_group = true;
            nd->type = N_OPEN, nd->group = (unsigned)++pr->groups, atom = false, p++;
            break;
        case ')':
            if (!in_group)
                return "an unmatched ')'";
            in_group = false;
            nd->type = N_CLOSE, nd->group = (unsigned)pr->groups, atom = false, p++;
            if (*p == '*' || *p == '+' || *p == '?' || *p == '{')
                return "a quantifier after a group is outside the subset";
            break;
        case '.': nd->type = N_ANY, p++; break;
        case '[':
            p = parse_set(p + 1, nd, &why);
            if (!p)
                return why;
            break;
        case '\\':
            if (!p[1] || is_alnum((unsigned char)p[1]))
                return "'\\' before a letter or digit, or at the end, is outside the subset";
            nd->type = N_CHAR, nd->c = (unsigned char)p[1], p += 2;
            break;
        default: nd->type = N_CHAR, nd->c = (unsigned char)*p, p++; break;
        }
        if (atom && (*p == '*' || *p == '+' || *p == '?')) {
            nd->q = *p == '*' ? Q_STAR : *p == '+' ? Q_PLUS : Q_OPT;
            p++;
            if (*p == '*' || *p == '+' || *p == '?')
                return "a quantifier after a quantifier is outside the subset";
        }
        pr->len++;
    }
    if (in_group)
        return "an unclosed '('";
    return NULL;
}

const char *minire_check(const char *pattern, size_t *ret_groups)
{
    struct prog pr;
    const char *why = compile(pattern, &pr);

    if (!why && ret_groups)
        *ret_groups = pr.groups;
    return why;
}

struct search {
    const struct prog *pr;
    const char *text;
    size_t text_len;
    long cur[MINIRE_MAX_GROUPS + 1][2];
    long best[MINIRE_MAX_GROUPS + 1][2];
    long best_end;
    long steps;
    bool gave_up;
};

static bool node_takes(const struct node *nd, unsigned char c)
{
    if (c == '\0')
        return false;
    switch (nd->type) {
    case N_CHAR: return c == nd->c;
    case N_ANY: return true; /* no REG_NEWLINE: '.' takes '\n' too */
    case N_SET: return (nd->set[c >> 3] >> (c & 7)) & 1u;
    case N_OPEN:
    case N_CLOSE:
    case N_BOL:
    case N_EOL: return false;
    }
    return false;
}

/* Every way nodes i.. match from pos; the longest end is kept (the first
 * found of that length, trying longer runs of a quantifier first). */
static void walk(struct search *s, size_t i, size_t pos)
{
    const struct node *nd;
    size_t max, min, n = 0;

    if (s->gave_up || ++s->steps > STEP_BUDGET) {
        s->gave_up = true;
        return;
    }
    if (i == s->pr->len) {
        if ((long)pos > s->best_end) {
            s->best_end = (long)pos;
            memcpy(s->best, s->cur, sizeof(s->best));
            s->best[0][1] = (long)pos;
        }
        return;
    }
    nd = &s->pr->n[i];
    switch (nd->type) {
    case N_BOL:
        if (pos == 0)
            walk(s, i + 1, pos);
        return;
    case N_EOL:
        if (pos == s->text_len)
            walk(s, i + 1, pos);
        return;
    case N_OPEN:
    case N_CLOSE: {
        long saved = s->cur[nd->group][nd->type == N_CLOSE];

        s->cur[nd->group][nd->type == N_CLOSE] = (long)pos;
        walk(s, i + 1, pos);
        s->cur[nd->group][nd->type == N_CLOSE] = saved;
        return;
    }
    case N_CHAR:
    case N_ANY:
    case N_SET: break;
    }
    max = nd->q == Q_ONE || nd->q == Q_OPT ? 1 : SIZE_MAX;
    min = nd->q == Q_ONE || nd->q == Q_PLUS ? 1 : 0;
    while (n < max && pos + n < s->text_len && node_takes(nd, (unsigned char)s->text[pos + n]))
        n++;
    for (size_t k = n + 1; k-- > min;) {
        walk(s, i + 1, pos + k);
        if (s->gave_up)
            return;
    }
}

int minire_search(const char *pattern, const char *text, long (*m)[2], size_t n_m)
{
    struct prog pr;
    struct search s = {.pr = &pr, .text = text, .text_len = strlen(text)};

    if (compile(pattern, &pr))
        return -1;
    for (size_t start = 0; start <= s.text_len; start++) {
        for (size_t g = 0; g <= MINIRE_MAX_GROUPS; g++)
            s.cur[g][0] = s.cur[g][1] = -1;
        s.cur[0][0] = (long)start;
        s.best_end = -1;
        walk(&s, 0, start);
        if (s.gave_up)
            return -1;
        if (s.best_end >= 0) {
            for (size_t g = 0; g < n_m; g++) {
                bool part = g <= pr.groups && s.best[g][0] >= 0 && s.best[g][1] >= 0;

                m[g][0] = part ? s.best[g][0] : -1;
                m[g][1] = part ? s.best[g][1] : -1;
            }
            return 1;
        }
        if (pr.len && pr.n[0].type == N_BOL)
            break; /* anchored: only the start can match */
    }
    return 0;
}
