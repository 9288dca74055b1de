/* hostlist.c - Slurm hostlist expressions: parse and expand, fold back (see hostlist.h). */
#include "common/hostlist.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---------- the list itself ---------- */

void hostlist_init(struct hostlist *list)
{
    memset(list, 0, sizeof *list);
}

void hostlist_free(struct hostlist *list)
{
    free(list->text);
    free(list->offsets);
    hostlist_init(list);
}

static int grow_array(void **buf, size_t *cap, size_t need, size_t elem_size)
{
    if (need <= *cap)
        return 0;
    size_t new_cap = *cap ? *cap : 16;
    while (new_cap < need)
        new_cap *= 2;
    void *bigger = realloc(*buf, new_cap * elem_size);
    if (!bigger)
        return -1;
    *buf = bigger;
    *cap = new_cap;
    return 0;
}

int hostlist_push(struct hostlist *list, const char *name, size_t len, struct dt_err *err)
{
    if (list->count >= HOSTLIST_MAX_NAMES)
        return dt_fail(err, "more than %u names (the hostlist limit)", HOSTLIST_MAX_NAMES);
    if (len > HOSTLIST_MAX_NAME)
        return dt_fail(err, "a name is longer than %d characters", HOSTLIST_MAX_NAME);
    if (grow_array((void **)&list->text, &list->text_cap, list->text_len + len + 1, 1) < 0 ||
        grow_array((void **)&list->offsets, &list->cap, list->count + 1, sizeof(size_t)) < 0)
        return dt_fail(err, "out of memory");
    list->offsets[list->count++] = list->text_len;
    memcpy(list->text + list->text_len, name, len);
    list->text[list->text_len + len] = '\0';
    list->text_len += len + 1;
    return 0;
}

const char *hostlist_nth(const struct hostlist *list, size_t i)
{
    return i < list->count ? list->text + list->offsets[i] : NULL;
}

ssize_t hostlist_find(const struct hostlist *list, const char *name)
{
    for (size_t i = 0; i < list->count; i++)
        if (strcmp(hostlist_nth(list, i), name) == 0)
            return (ssize_t)i;
    return -1;
}

/* ---------- parsing ---------- */

/* One bracket range: lo..hi printed with `width` digits. */
struct range {
    uint64_t lo, hi;
    int width;
};

/* One piece of an element: literal text, or a bracket group (a list of ranges). */
struct part {
    const char *literal;   /* NULL for a group */
    size_t literal_len;
    struct range *ranges;
    size_t num_ranges;
    uint64_t num_names;    /* names the group yields */
};

struct parser {
    const char *expr;
    size_t pos;            /* 0-based; messages say pos + 1 */
    struct dt_err *err;
};

static int parse_error(struct parser *p, size_t at, const char *what)
{
    return dt_fail(p->err, "invalid hostlist \"%s\": %s at character %zu", p->expr, what, at + 1);
}

static bool is_separator(char c)
{
    return c == ',' || c == ' ' || c == '\t' || c == '\n';
}

/* Reads a run of digits at p->pos. Returns the digit count (0 if none), or -1 on error. */
static int parse_number(struct parser *p, uint64_t *value)
{
    size_t start = p->pos;
    uint64_t v = 0;
    while (isdigit((unsigned char)p->expr[p->pos])) {
        if (p->pos - start >= HOSTLIST_MAX_DIGITS)
            return parse_error(p, start, "a range bound has more than 18 digits");
        v = v * 10 + (uint64_t)(p->expr[p->pos] - '0');
        p->pos++;
    }
    *value = v;
    return (int)(p->pos - start);
}

/* Explains what is wrong with the character where a number should start. */
static int expected_number(struct parser *p)
{
    char c = p->expr[p->pos];
    if (c == '\0')
        return parse_error(p, p->pos, "unclosed '[' (the expression ends inside brackets)");
    if (c == ',' || c == ']')
        return parse_error(p, p->pos, "empty range");
    if (c == '[')
        return parse_error(p, p->pos, "'[' inside brackets");
    char what[64];
    snprintf(what, sizeof what, "expected a number, found '%c'", c);
    return parse_error(p, p->pos, what);
}

/* Parses "lo" or "lo-hi" at p->pos. */
static int parse_range(struct parser *p, struct range *r)
{
    size_t start = p->pos;
    int width = parse_number(p, &r->lo);
    if (width < 0)
        return -1;
    if (width == 0)
        return expected_number(p);
    r->width = width;
    r->hi = r->lo;
    if (p->expr[p->pos] == '-') {
        p->pos++;
        int hi_width = parse_number(p, &r->hi);
        if (hi_width < 0)
            return -1;
        if (hi_width == 0)
            return expected_number(p);
    }
    char c = p->expr[p->pos];
    if (c == '-')
        return parse_error(p, p->pos, "a second '-' in one range (write lo-hi,lo-hi)");
    if (c != ',' && c != ']') {
        if (c == '\0')
            return parse_error(p, p->pos, "unclosed '[' (the expression ends inside brackets)");
        return expected_number(p);   /* names the stray character */
    }
    if (r->lo > r->hi)
        return parse_error(p, start, "range runs backwards (low bound above high bound)");
    if (r->hi - r->lo >= HOSTLIST_MAX_RANGE) {
        char what[128];
        snprintf(what, sizeof what, "range of %" PRIu64 " names (the limit is %d, as in Slurm)",
                 r->hi - r->lo + 1, HOSTLIST_MAX_RANGE);
        return parse_error(p, start, what);
    }
    return 0;
}

/* Parses "[r,r,...]" with p->pos on the '['. */
static int parse_group(struct parser *p, struct part *group)
{
    p->pos++;   /* '[' */
    size_t cap = 0;
    for (;;) {
        if (grow_array((void **)&group->ranges, &cap, group->num_ranges + 1, sizeof(struct range)) < 0)
            return dt_fail(p->err, "out of memory");
        struct range *r = &group->ranges[group->num_ranges];
        if (parse_range(p, r) < 0)
            return -1;
        group->num_ranges++;
        group->num_names += r->hi - r->lo + 1;
        if (group->num_names > HOSTLIST_MAX_NAMES)
            return parse_error(p, p->pos, "too many names in one bracket group");
        if (p->expr[p->pos++] == ']')
            return 0;
    }
}

static void free_parts(struct part *parts, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(parts[i].ranges);
    free(parts);
}

/* Writes the names of parts[k..] after `prefix` (prefix_len bytes) into the list: the first
 * group varies slowest, as in Slurm. */
static int emit_names(struct parser *p, const struct part *parts, size_t n, size_t k,
                char *name, size_t name_len, struct hostlist *list)
{
    if (k == n)
        return hostlist_push(list, name, name_len, p->err) < 0 ? dt_wrap(p->err, "hostlist \"%s\"", p->expr) : 0;
    const struct part *part = &parts[k];
    if (part->literal) {
        if (name_len + part->literal_len > HOSTLIST_MAX_NAME)
            return dt_fail(p->err, "hostlist \"%s\": a name is longer than %d characters", p->expr, HOSTLIST_MAX_NAME);
        memcpy(name + name_len, part->literal, part->literal_len);
        return emit_names(p, parts, n, k + 1, name, name_len + part->literal_len, list);
    }
    for (size_t r = 0; r < part->num_ranges; r++) {
        const struct range *range = &part->ranges[r];
        for (uint64_t v = range->lo;; v++) {
            char digits[32];
            int len = snprintf(digits, sizeof digits, "%0*" PRIu64, range->width, v);
            if (name_len + (size_t)len > HOSTLIST_MAX_NAME)
                return dt_fail(p->err, "hostlist \"%s\": a name is longer than %d characters", p->expr, HOSTLIST_MAX_NAME);
            memcpy(name + name_len, digits, (size_t)len);
            if (emit_names(p, parts, n, k + 1, name, name_len + (size_t)len, list) < 0)
                return -1;
            if (v == range->hi)
                break;
        }
    }
    return 0;
}

/* Parses one element (up to a separator outside brackets) into parts, then expands it. */
static int parse_element(struct parser *p, struct hostlist *list)
{
    struct part *parts = NULL;
    size_t num_parts = 0, cap = 0, num_groups = 0;
    uint64_t names = 1;
    size_t trailing_text_at = 0;
    int rc = -1;
    while (p->expr[p->pos] && !is_separator(p->expr[p->pos])) {
        if (grow_array((void **)&parts, &cap, num_parts + 1, sizeof(struct part)) < 0) {
            dt_fail(p->err, "out of memory");
            goto out;
        }
        struct part *part = &parts[num_parts];
        memset(part, 0, sizeof *part);
        char c = p->expr[p->pos];
        if (c == '[') {
            num_parts++;
            if (parse_group(p, part) < 0)
                goto out;
            names *= part->num_names;   /* both factors <= 2^18: no overflow before the check */
            if (names > HOSTLIST_MAX_NAMES || list->count + names > HOSTLIST_MAX_NAMES) {
                parse_error(p, p->pos - 1, "expands to more names than the hostlist limit (262144)");
                goto out;
            }
            num_groups++;
            continue;
        }
        if (c == ']') {
            parse_error(p, p->pos, "']' without a matching '['");
            goto out;
        }
        part->literal = p->expr + p->pos;
        trailing_text_at = p->pos;
        while (p->expr[p->pos] && !is_separator(p->expr[p->pos]) && p->expr[p->pos] != '[' &&
               p->expr[p->pos] != ']') {
            if (iscntrl((unsigned char)p->expr[p->pos])) {
                parse_error(p, p->pos, "control character in a name");
                goto out;
            }
            p->pos++;
        }
        part->literal_len = (size_t)(p->expr + p->pos - part->literal);
        num_parts++;
    }
    /* Slurm accepts text between groups ("rack[1-2]-gn[01-02]") but not after the last one. */
    if (num_groups > 0 && parts[num_parts - 1].literal) {
        parse_error(p, trailing_text_at, "text after the last ']' (Slurm rejects this form too)");
        goto out;
    }
    char name[HOSTLIST_MAX_NAME + 1];
    rc = emit_names(p, parts, num_parts, 0, name, 0, list);
out:
    free_parts(parts, num_parts);   /* a group is counted before it is parsed, so its ranges are freed too */
    return rc;
}

int hostlist_expand(const char *expr, struct hostlist *list, struct dt_err *err)
{
    struct parser p = {.expr = expr ? expr : "", .pos = 0, .err = err};
    size_t count_before = list->count;
    for (;;) {
        while (is_separator(p.expr[p.pos]))
            p.pos++;
        if (!p.expr[p.pos])
            break;
        if (parse_element(&p, list) < 0) {
            if (list->count > count_before) {   /* leave the list as it was */
                list->text_len = list->offsets[count_before];
                list->count = count_before;
            }
            return -1;
        }
    }
    if (list->count == count_before)
        return dt_fail(err, "invalid hostlist \"%s\": no host names in it", p.expr);
    return 0;
}

/* ---------- folding back (Slurm's hostlist_ranged_string) ---------- */

/* A name split like Slurm's hostname_create: prefix + trailing digits. */
struct split_name {
    const char *prefix;
    size_t prefix_len;
    bool single;        /* no numeric suffix (or one too long to be a number) */
    uint64_t num;
    int width;
};

static struct split_name split_name_number(const char *name)
{
    struct split_name s = {.prefix = name, .prefix_len = strlen(name), .single = true};
    size_t digits_at = s.prefix_len;
    while (digits_at > 0 && isdigit((unsigned char)name[digits_at - 1]))
        digits_at--;
    size_t digits = s.prefix_len - digits_at;
    if (digits == 0 || digits > HOSTLIST_MAX_DIGITS)
        return s;
    s.single = false;
    s.prefix_len = digits_at;
    s.width = (int)digits;
    s.num = strtoull(name + digits_at, NULL, 10);
    return s;
}

/* Leading zeros `num` gets when printed `width` wide (Slurm's _zero_padded). */
static int zero_padding(uint64_t num, int width)
{
    int digits = 1;
    while (num /= 10)
        digits++;
    return width > digits ? width - digits : 0;
}

/* Slurm's _width_equiv: may n (printed wn wide) and m (wm wide) share one range? Adjusts the
 * widths to the common one when they may; gn9,gn10 share [9-10], gn09,gn010 do not. */
static bool width_equivalent(uint64_t n, int *wn, uint64_t m, int *wm)
{
    if (*wn == *wm)
        return true;
    int npad = zero_padding(n, *wn), nmpad = zero_padding(n, *wm);
    int mpad = zero_padding(m, *wm), mnpad = zero_padding(m, *wn);
    if (npad != nmpad && mpad != mnpad)
        return false;
    if (npad != nmpad) {
        *wm = *wn;
        return true;
    }
    *wn = *wm;
    return true;
}

struct folded {
    struct split_name name;   /* prefix and flags of the range */
    uint64_t lo, hi;
    int width;
};

static bool same_prefix(const struct split_name *a, const struct split_name *b)
{
    return a->single == b->single && a->prefix_len == b->prefix_len &&
           memcmp(a->prefix, b->prefix, a->prefix_len) == 0;
}

struct strbuf {
    char *data;
    size_t len, cap;
    bool failed;
};

static void sb_append(struct strbuf *sb, const char *text, size_t len)
{
    if (sb->failed || grow_array((void **)&sb->data, &sb->cap, sb->len + len + 1, 1) < 0) {
        sb->failed = true;
        return;
    }
    memcpy(sb->data + sb->len, text, len);
    sb->len += len;
    sb->data[sb->len] = '\0';
}

static void sb_number(struct strbuf *sb, uint64_t v, int width)
{
    char digits[32];
    int len = snprintf(digits, sizeof digits, "%0*" PRIu64, width, v);
    sb_append(sb, digits, (size_t)len);
}

static void append_range(struct strbuf *sb, const struct folded *r)
{
    sb_number(sb, r->lo, r->width);
    if (r->hi != r->lo) {
        sb_append(sb, "-", 1);
        sb_number(sb, r->hi, r->width);
    }
}

/* Appends ranges[first..last) that share one prefix: "gn01", or "gn[01-03,05]". */
static void append_group(struct strbuf *sb, const struct folded *ranges, size_t first, size_t last)
{
    const struct folded *r0 = &ranges[first];
    sb_append(sb, r0->name.prefix, r0->name.prefix_len);
    if (r0->name.single)
        return;
    bool bracket = last - first > 1 || r0->lo != r0->hi;
    if (bracket)
        sb_append(sb, "[", 1);
    for (size_t i = first; i < last; i++) {
        if (i > first)
            sb_append(sb, ",", 1);
        append_range(sb, &ranges[i]);
    }
    if (bracket)
        sb_append(sb, "]", 1);
}

char *hostlist_compress(const struct hostlist *list)
{
    struct folded *ranges = calloc(list->count ? list->count : 1, sizeof *ranges);
    if (!ranges)
        return NULL;
    size_t n = 0;
    for (size_t i = 0; i < list->count; i++) {
        struct split_name s = split_name_number(hostlist_nth(list, i));
        struct folded *tail = n ? &ranges[n - 1] : NULL;
        /* Slurm joins a host onto the previous range only when it continues it. */
        if (tail && !s.single && same_prefix(&tail->name, &s) && tail->hi + 1 == s.num &&
            width_equivalent(tail->lo, &tail->width, s.num, &s.width)) {
            tail->hi = s.num;
            continue;
        }
        ranges[n++] = (struct folded){.name = s, .lo = s.num, .hi = s.num, .width = s.width};
    }
    struct strbuf sb = {0};
    sb_append(&sb, "", 0);
    for (size_t first = 0; first < n;) {
        size_t last = first + 1;
        while (last < n && !ranges[first].name.single && same_prefix(&ranges[first].name, &ranges[last].name))
            last++;
        if (first > 0)
            sb_append(&sb, ",", 1);
        append_group(&sb, ranges, first, last);
        first = last;
    }
    free(ranges);
    if (sb.failed) {
        free(sb.data);
        return NULL;
    }
    return sb.data;
}
