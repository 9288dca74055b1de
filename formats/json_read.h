/* json_read.h - a strict reader of one JSON text (RFC 8259) for parsers that know the shape they
 * expect: the caller walks objects and arrays and takes the values it wants straight into its own
 * structs; values it does not want are checked and skipped. Nothing is allocated.
 *
 * Why not jansson here: building a tree of every run record and copying the fields out of it was
 * most of dtrain-analyze's time on a study's records (README, Benchmarks). jansson still writes
 * the records and reads them in the reference parser the tests hold this one against. */
#ifndef JSON_READ_H
#define JSON_READ_H

#include <stddef.h>

#include "common/dt_error.h"

/* The depth of nested arrays and objects a skipped value may have (jansson's limit too). */
#define JSON_MAX_DEPTH 2048

struct json_reader {
    const char *text;   /* the start, for columns in messages */
    const char *at;     /* the next byte to read */
    struct dt_err *err;
    int depth;          /* arrays and objects open around r->at */
};

enum json_kind { JSON_KIND_OBJECT, JSON_KIND_ARRAY, JSON_KIND_STRING, JSON_KIND_NUMBER, JSON_KIND_TRUE,
                 JSON_KIND_FALSE, JSON_KIND_NULL, JSON_KIND_INVALID };

struct json_number {
    double value;
    long long integer;   /* when is_integer: written without fraction or exponent */
    int is_integer;
};

void json_reader_init(struct json_reader *r, const char *text, struct dt_err *err);

/* The kind of the next value, after skipping white space; nothing consumed. */
enum json_kind json_peek(struct json_reader *r);

/* Objects: json_object_begin consumes '{'; each json_object_next then reads the separator and
 * either the next member's key and ':' (returns 1, *index counts the members) or the closing '}'
 * (returns 0). The caller reads or skips the member's value before the next call. A key longer than
 * key_size - 1 bytes is reported as "" (no caller asks for such a key). -1 on bad JSON. */
int json_object_begin(struct json_reader *r);
int json_object_next(struct json_reader *r, int *index, char *key, size_t key_size);

/* Arrays, the same way: 1 when an element follows (read it next), 0 after the closing ']'. */
int json_array_begin(struct json_reader *r);
int json_array_next(struct json_reader *r, int *index);

/* A string, escapes decoded, into out, cut to size - 1 bytes as snprintf would; returns its whole
 * length, as snprintf does. -1 when the next value is not a string or the string is bad JSON
 * (control characters, bad escapes or UTF-8, \u0000). */
/* The length of the valid UTF-8 sequence at s (first byte >= 0x80), or 0 (RFC 3629: no overlong
 * forms, no surrogates, nothing above U+10FFFF). The record writer checks its text with it too. */
int json_utf8_length(const unsigned char *s);

long json_read_string(struct json_reader *r, char *out, size_t size);

/* A number; an integer beyond long long or a number beyond double is an error, as in jansson. */
int json_read_number(struct json_reader *r, struct json_number *out);

/* The literal null. */
int json_read_null(struct json_reader *r);

/* Any value, checked and passed over. */
int json_skip_value(struct json_reader *r);

/* Only white space may follow the value read. */
int json_read_end(struct json_reader *r);

#endif
