/* json_read.c - a strict, allocation-free JSON reader (see json_read.h). It accepts exactly what
 * jansson's json_loads accepts (tests/fuzz/fuzz_record.c holds the two against each other), except
 * that repeated keys are the caller's to refuse: it knows which keys it reads. */
#include "formats/json_read.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

void json_reader_init(struct json_reader *r, const char *text, struct dt_err *err)
{
    r->text = r->at = text;
    r->err = err;
    r->depth = 0;
}

static int json_bad(struct json_reader *r, const char *what)
{
    return dt_fail(r->err, "invalid JSON at column %ld: %s", (long)(r->at - r->text) + 1, what);
}

static void skip_space(struct json_reader *r)
{
    while (*r->at == ' ' || *r->at == '\t' || *r->at == '\n' || *r->at == '\r')
        r->at++;
}

enum json_kind json_peek(struct json_reader *r)
{
    skip_space(r);
    switch (*r->at) {
    case '{': return JSON_KIND_OBJECT;
    case '[': return JSON_KIND_ARRAY;
    case '"': return JSON_KIND_STRING;
    case 't': return JSON_KIND_TRUE;
    case 'f': return JSON_KIND_FALSE;
    case 'n': return JSON_KIND_NULL;
    default: return *r->at == '-' || (*r->at >= '0' && *r->at <= '9') ? JSON_KIND_NUMBER : JSON_KIND_INVALID;
    }
}

static int open_container(struct json_reader *r, char opening, const char *what)
{
    skip_space(r);
    if (*r->at != opening)
        return json_bad(r, what);
    if (++r->depth > JSON_MAX_DEPTH)
        return json_bad(r, "nested too deep");
    r->at++;
    return 0;
}

int json_object_begin(struct json_reader *r) { return open_container(r, '{', "expected an object"); }
int json_array_begin(struct json_reader *r) { return open_container(r, '[', "expected an array"); }

/* The separator before element *index of a container closed by `closing`: 0 at the close, 1 when
 * an element follows. */
static int next_element(struct json_reader *r, int *index, char closing)
{
    skip_space(r);
    if (*r->at == closing) {   /* after a ',' the caller has read a value: "[1,]" never gets here */
        r->at++, r->depth--;
        return 0;
    }
    if (*index > 0) {
        if (*r->at != ',')
            return json_bad(r, closing == '}' ? "expected ',' or '}'" : "expected ',' or ']'");
        r->at++;
    }
    (*index)++;
    return 1;
}

int json_object_next(struct json_reader *r, int *index, char *key, size_t key_size)
{
    int more = next_element(r, index, '}');
    if (more <= 0)
        return more;
    skip_space(r);
    if (*r->at != '"')
        return json_bad(r, "expected a member name in double quotes");
    /* a key too long for the caller's buffer is none of its keys: read it whole, report "" */
    long length = json_read_string(r, key, key_size);
    if (length < 0)
        return -1;
    if (key_size && (size_t)length >= key_size)
        key[0] = '\0';
    skip_space(r);
    if (*r->at != ':')
        return json_bad(r, "expected ':' after the member name");
    r->at++;
    return 1;
}

int json_array_next(struct json_reader *r, int *index) { return next_element(r, index, ']'); }

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9')
        return c - '0';
    if (c >= 'a' && c <= 'f')
        return c - 'a' + 10;
    if (c >= 'A' && c <= 'F')
        return c - 'A' + 10;
    return -1;
}

/* Four hex digits after "\u"; -1 when they are not. */
static long read_hex4(const char *at)
{
    long value = 0;
    for (int i = 0; i < 4; i++) {
        int digit = hex_digit(at[i]);
        if (digit < 0)
            return -1;
        value = value * 16 + digit;
    }
    return value;
}

/* An escape at r->at (just after the backslash) into code point *cp; advances past it. */
static int read_escape(struct json_reader *r, long *cp)
{
    static const char plain[] = "\"\\/bfnrt", meaning[] = "\"\\/\b\f\n\r\t";
    const char *found = *r->at ? strchr(plain, *r->at) : NULL;
    if (found) {
        *cp = meaning[found - plain];
        r->at++;
        return 0;
    }
    if (*r->at != 'u' || (*cp = read_hex4(r->at + 1)) < 0)
        return json_bad(r, "invalid escape in a string");
    r->at += 5;
    if (*cp >= 0xDC00 && *cp <= 0xDFFF)
        return json_bad(r, "a \\u escape of a lone low surrogate");
    if (*cp >= 0xD800 && *cp <= 0xDBFF) {
        long low = r->at[0] == '\\' && r->at[1] == 'u' ? read_hex4(r->at + 2) : -1;
        if (low < 0xDC00 || low > 0xDFFF)
            return json_bad(r, "a \\u escape of a high surrogate without its low one");
        *cp = 0x10000 + ((*cp - 0xD800) << 10) + (low - 0xDC00);
        r->at += 6;
    }
    if (*cp == 0)
        return json_bad(r, "\\u0000 in a string");
    return 0;
}

int json_utf8_length(const unsigned char *s)
{
    int length = s[0] >= 0xC2 && s[0] <= 0xDF ? 2 : s[0] >= 0xE0 && s[0] <= 0xEF ? 3 : s[0] >= 0xF0 && s[0] <= 0xF4 ? 4 : 0;
    for (int i = 1; i < length; i++)
        if (s[i] < 0x80 || s[i] > 0xBF)
            return 0;
    if ((s[0] == 0xE0 && s[1] < 0xA0) || (s[0] == 0xED && s[1] > 0x9F) || (s[0] == 0xF0 && s[1] < 0x90) ||
        (s[0] == 0xF4 && s[1] > 0x8F))
        return 0;
    return length;
}

static size_t encode_utf8(long cp, char out[4])
{
    if (cp < 0x80)
        return out[0] = (char)cp, 1;
    if (cp < 0x800)
        return out[0] = (char)(0xC0 | cp >> 6), out[1] = (char)(0x80 | (cp & 0x3F)), 2;
    if (cp < 0x10000)
        return out[0] = (char)(0xE0 | cp >> 12), out[1] = (char)(0x80 | ((cp >> 6) & 0x3F)),
               out[2] = (char)(0x80 | (cp & 0x3F)), 3;
    out[0] = (char)(0xF0 | cp >> 18), out[1] = (char)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (char)(0x80 | ((cp >> 6) & 0x3F)), out[3] = (char)(0x80 | (cp & 0x3F));
    return 4;
}

/* Bytes a string holds as they are: printable ASCII but the quote and the backslash. */
static int plain_byte(unsigned char c) { return c >= 0x20 && c < 0x80 && c != '"' && c != '\\'; }

/* The next piece of a string at r->at that is not a run of plain bytes: an escape or a UTF-8
 * sequence, into bytes; its length, or 0 at the closing quote, or -1. */
static int read_special(struct json_reader *r, char bytes[4])
{
    unsigned char c = (unsigned char)*r->at;
    if (c == '"')
        return 0;
    if (c < 0x20)
        return json_bad(r, c ? "a control character in a string" : "a string without its closing quote");
    if (c == '\\') {
        long cp = 0;
        r->at++;
        return read_escape(r, &cp) < 0 ? -1 : (int)encode_utf8(cp, bytes);
    }
    int length = json_utf8_length((const unsigned char *)r->at);
    if (length == 0)
        return json_bad(r, "invalid UTF-8 in a string");
    memcpy(bytes, r->at, (size_t)length);
    r->at += length;
    return length;
}

long json_read_string(struct json_reader *r, char *out, size_t size)
{
    skip_space(r);
    if (*r->at != '"')
        return json_bad(r, "expected a string");
    r->at++;
    size_t length = 0, room = size ? size - 1 : 0;
    for (;;) {
        const char *run = r->at;
        while (plain_byte((unsigned char)*r->at))
            r->at++;
        size_t count = (size_t)(r->at - run);
        if (length < room)
            memcpy(out + length, run, count < room - length ? count : room - length);
        length += count;
        char bytes[4];
        int special = read_special(r, bytes);
        if (special <= 0) {
            if (special < 0)
                return -1;
            break;
        }
        for (int i = 0; i < special; i++, length++)
            if (length < room)
                out[length] = bytes[i];
    }
    r->at++;
    if (size)
        out[length < room ? length : room] = '\0';
    return (long)length;
}

/* The end of the number at s per the JSON grammar, or NULL; *is_integer when it has no fraction
 * or exponent. */
static const char *scan_number(const char *s, int *is_integer)
{
    *is_integer = 1;
    if (*s == '-')
        s++;
    if (*s == '0')
        s++;
    else if (*s >= '1' && *s <= '9')
        while (*s >= '0' && *s <= '9')
            s++;
    else
        return NULL;
    if (*s == '.') {
        *is_integer = 0;
        if (*++s < '0' || *s > '9')
            return NULL;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    if (*s == 'e' || *s == 'E') {
        *is_integer = 0;
        if (*++s == '+' || *s == '-')
            s++;
        if (*s < '0' || *s > '9')
            return NULL;
        while (*s >= '0' && *s <= '9')
            s++;
    }
    return s;
}

/* The number in s..end when a double operation gives it exactly rounded (Clinger's fast path:
 * at most 2^53 as digits, a power of ten up to 1e22, both exact in a double, so one multiply or
 * divide rounds once); 0 when strtod must read it. Most numbers in records are of this kind. */
static int fast_real(const char *s, const char *end, double *value)
{
    static const double powers[] = {1e0,  1e1,  1e2,  1e3,  1e4,  1e5,  1e6,  1e7,  1e8,  1e9,  1e10, 1e11,
                                    1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22};
    int negative = *s == '-', digits = 0, fraction_digits = 0, in_fraction = 0;
    unsigned long long mantissa = 0;
    for (s += negative; s < end && *s != 'e' && *s != 'E'; s++) {
        if (*s == '.') {
            in_fraction = 1;
            continue;
        }
        if (++digits > 16)   /* 16 digits cannot overflow; more rarely fit 2^53 */
            return 0;
        mantissa = mantissa * 10 + (unsigned)(*s - '0');
        fraction_digits += in_fraction;
    }
    int exponent = 0;
    if (s < end) {   /* at the 'e' */
        int sign = *++s == '-' ? -1 : 1;
        for (s += *s == '-' || *s == '+'; s < end; s++)
            if ((exponent = exponent * 10 + (*s - '0')) > 400)
                return 0;
        exponent *= sign;
    }
    exponent -= fraction_digits;
    if (mantissa > (1ull << 53) || exponent < -22 || exponent > 22)
        return 0;
    double m = (double)mantissa;
    *value = exponent < 0 ? m / powers[-exponent] : m * powers[exponent];
    if (negative)
        *value = -*value;
    return 1;
}

int json_read_number(struct json_reader *r, struct json_number *out)
{
    skip_space(r);
    const char *end = scan_number(r->at, &out->is_integer);
    if (!end)
        return json_bad(r, "expected a number");
    if (!out->is_integer && fast_real(r->at, end, &out->value)) {
        r->at = end;
        return 0;
    }
    char *parsed_to;
    errno = 0;
    /* the grammar's number is all strtoll/strtod read here: it is not followed by what would
     * extend it (digits, '.', exponent), and hex or inf cannot start one */
    if (out->is_integer) {
        out->integer = strtoll(r->at, &parsed_to, 10);
        if (errno == ERANGE)
            return json_bad(r, "an integer too big for 64 bits");
        out->value = (double)out->integer;
    } else {
        out->value = strtod(r->at, &parsed_to);
        if (errno == ERANGE && (out->value > 1 || out->value < -1))
            return json_bad(r, "a number too big for a double");
    }
    if (parsed_to != end)
        return json_bad(r, "a number the C library reads otherwise");
    r->at = end;
    return 0;
}

static int read_literal(struct json_reader *r, const char *word)
{
    size_t length = strlen(word);
    if (strncmp(r->at, word, length) != 0)
        return json_bad(r, "invalid literal (true, false and null are the words JSON knows)");
    r->at += length;
    return 0;
}

int json_skip_value(struct json_reader *r)
{
    struct json_number number;
    int index = 0, more;
    if (r->depth >= JSON_MAX_DEPTH)   /* jansson counts scalars as a level too */
        return json_bad(r, "nested too deep");
    switch (json_peek(r)) {
    case JSON_KIND_STRING: return json_read_string(r, NULL, 0) < 0 ? -1 : 0;
    case JSON_KIND_NUMBER: return json_read_number(r, &number);
    case JSON_KIND_TRUE: return read_literal(r, "true");
    case JSON_KIND_FALSE: return read_literal(r, "false");
    case JSON_KIND_NULL: return read_literal(r, "null");
    case JSON_KIND_ARRAY:
        if (json_array_begin(r) < 0)
            return -1;
        while ((more = json_array_next(r, &index)) == 1)
            if (json_skip_value(r) < 0)
                return -1;
        return more;
    case JSON_KIND_OBJECT:
        if (json_object_begin(r) < 0)
            return -1;
        while ((more = json_object_next(r, &index, NULL, 0)) == 1)
            if (json_skip_value(r) < 0)
                return -1;
        return more;
    default: return json_bad(r, *r->at ? "expected a value" : "the text ends where a value should be");
    }
}

int json_read_null(struct json_reader *r)
{
    skip_space(r);
    return read_literal(r, "null");
}

int json_read_end(struct json_reader *r)
{
    skip_space(r);
    return *r->at ? json_bad(r, "more after the end of the value") : 0;
}
