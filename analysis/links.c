/* links.c - the links and allreduces dtrain-analyze predict is given (links.h): a bandwidth and
 * latency as words, or dtrain-commbench's measured JSON tables. */
#include "analysis/links.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

double link_parse_bandwidth(const char *text)
{
    char *end;
    double x = strtod(text, &end);
    if (end == text || !(x > 0))
        return -1;
    static const struct {
        const char *unit;
        double bytes;
    } units[] = {{"gbit", 1e9 / 8}, {"mbit", 1e6 / 8}, {"gb/s", 1e9}, {"mb/s", 1e6}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++)
        if (strcasecmp(end, units[i].unit) == 0)
            return x * units[i].bytes;
    return -1;
}

double link_parse_latency(const char *text)
{
    char *end;
    double x = strtod(text, &end);
    if (end == text || x < 0)
        return -1;
    if (*end == '\0' || strcmp(end, "s") == 0)
        return x;
    if (strcmp(end, "ms") == 0)
        return x * 1e-3;
    if (strcmp(end, "us") == 0)
        return x * 1e-6;
    return -1;
}

/* A dtrain-commbench JSON table's rows as points of a curve, each size divided by `byte_parts` and
 * each time by `parts`: for a link's messages measured by an allreduce on 2 ranks, 2 and 2 (two
 * messages of n/2, the ring's reduce-scatter and allgather: a message of m bytes costs half the
 * time measured at 2m); by a push and pull on 2 ranks, 1 and 2 (a worker's push of n, then the
 * sum of n back: a message of m costs half the time at m); 1 and 1 for an operation itself.
 * Returns the points (in increasing size), or -1 with why. */
static int curve_of(const char *path, json_t *rows, const char *key, double byte_parts, double parts,
                    struct link_point *curve, char *why, size_t size)
{
    int points = 0;
    size_t i;
    json_t *row;
    bool optional = strcmp(key, "time_us") != 0;   /* --inflight's: the largest sizes may have none */
    json_array_foreach(rows, i, row) {
        if (optional && !json_object_get(row, key))
            continue;
        double bytes = json_number_value(json_object_get(row, "bytes")),
               us = json_number_value(json_object_get(row, key));
        if (!(bytes > 0 && bytes <= LINK_MAX_BYTES) || !(us > 0 && us <= LINK_MAX_SECONDS * 1e6))
            return snprintf(why, size, "%s: rows[%zu]: expected bytes (1 to %.0e) and %s (up to %.0e) above 0",
                            path, i, LINK_MAX_BYTES, key, LINK_MAX_SECONDS * 1e6), -1;
        if (points == CURVE_POINTS || (points > 0 && bytes / byte_parts <= curve[points - 1].bytes))
            return snprintf(why, size, "%s: rows[%zu]: expected at most %d sizes, increasing", path, i, CURVE_POINTS), -1;
        curve[points++] = (struct link_point){bytes / byte_parts, us * 1e-6 / parts};
    }
    return points;
}

/* The rows' times with many messages under way (--inflight), into streamed (key
 * "time_us_inflight"), or of one of them alone (key "time_us_alone"): their count (0 when the file
 * has none), or -1 with why. */
static int streamed_of(json_t *doc, const char *path, const char *key, double byte_parts, double parts,
                       struct link_point *streamed, char *why, size_t size)
{
    json_t *rows = json_object_get(doc, "rows");
    if (!json_is_integer(json_object_get(doc, "inflight")) || !json_object_get(json_array_get(rows, 0), key))
        return 0;
    return curve_of(path, rows, key, byte_parts, parts, streamed, why, size);
}

/* streamed and alone (each 2 points or more, else left out) into link, with the K of --inflight. */
static void set_streamed(json_t *doc, struct link_cost *link, const struct link_point *streamed, int streamed_points,
                         const struct link_point *alone, int alone_points)
{
    link->streamed = streamed_points >= 2 ? streamed : NULL, link->streamed_points = streamed_points;
    bool both = link->streamed && alone_points >= 2;
    link->alone = both ? alone : NULL, link->alone_points = both ? alone_points : 0;
    link->inflight = link->streamed ? (int)json_integer_value(json_object_get(doc, "inflight")) : 0;
}

int link_from_json(json_t *doc, const char *path, const char *want, bool measured, struct link_cost *link,
                   struct link_curves *curves, char *why, size_t size)
{
    const char *op = json_string_value(json_object_get(doc, "op"));
    if (!op || strcmp(op, want) != 0 || json_integer_value(json_object_get(doc, "ranks")) != 2 ||
        json_object_get(doc, "partition_bytes"))
        return snprintf(why, size, "%s: expected dtrain-commbench --op %s --json on 2 ranks across the link, without "
                        "--partition-bytes (\"op\", \"ranks\")", path, want), -1;
    double byte_parts = strcmp(op, "pushpull") == 0 ? 1 : 2;   /* the bytes of one message at a row's size */
    json_t *fit = json_object_get(doc, "fit");
    double alpha = json_number_value(json_object_get(fit, "alpha_s")),
           beta = json_number_value(json_object_get(fit, "beta_s_per_byte"));
    int points = measured ? curve_of(path, json_object_get(doc, "rows"), "time_us", byte_parts, 2, curves->one, why,
                                     size) : 0;
    int streamed = points >= 2 ? streamed_of(doc, path, "time_us_inflight", byte_parts, 2, curves->streamed, why, size)
                               : 0;
    int alone = streamed >= 2 ? streamed_of(doc, path, "time_us_alone", byte_parts, 2, curves->alone, why, size) : 0;
    if (points < 0 || streamed < 0 || alone < 0)
        return -1;
    if (points >= 2) {   /* the measured times: the fit is not needed */
        *link = (struct link_cost){.curve = curves->one, .points = points};
        set_streamed(doc, link, curves->streamed, streamed, curves->alone, alone);
        return 0;
    }
    if (!(beta > 0) || !isfinite(alpha))
        return snprintf(why, size, "%s: no alpha-beta fit (dtrain-commbench --json writes one)", path), -1;
    if (!(beta <= 1) || !(alpha <= LINK_MAX_SECONDS))   /* slower than a byte a second: a hand edit */
        return snprintf(why, size, "%s: the fit is out of range (alpha %g s, beta %g s/byte)", path, alpha, beta), -1;
    if (alpha < 0) {   /* noise at the small sizes: the line crosses below zero; no latency, then */
        fprintf(stderr, "dtrain-analyze: %s: the fit's alpha is %.3g s, below zero: taken as 0\n", path, alpha);
        alpha = 0;
    }
    /* 2 ranks: an allreduce of n is 2 alpha + n beta, a push and pull of n 2 alpha + 2 n beta */
    *link = (struct link_cost){.alpha = alpha / 2, .beta = byte_parts == 1 ? beta / 2 : beta};
    return 0;
}

int link_parse(const char *text, const char *op, bool measured, struct link_cost *link, struct link_curves *curves,
               char *why, size_t size)
{
    const char *json = strstr(text, ".json");
    if (json && json[5] == '\0') {
        json_error_t jerr;
        json_t *doc = json_load_file(text, 0, &jerr);
        if (!doc)
            return snprintf(why, size, "%s:%d: %s", text, jerr.line, jerr.text), -1;
        int rc = link_from_json(doc, text, op, measured, link, curves, why, size);
        json_decref(doc);
        return rc;
    }
    char copy[128];
    snprintf(copy, sizeof copy, "%s", text);
    char *colon = strchr(copy, ':');
    if (colon)
        *colon = '\0';
    double bandwidth = link_parse_bandwidth(copy), latency = colon ? link_parse_latency(colon + 1) : 25e-6;
    if (bandwidth < 0 || latency < 0)
        return snprintf(why, size, "\"%s\": expected BANDWIDTH[:LATENCY] (10gbit:25us, 12GB/s:5us) or a "
                        "dtrain-commbench .json file", text), -1;
    *link = (struct link_cost){.alpha = latency, .beta = 1 / bandwidth};
    return 0;
}

/* --servers-pieces: a round of ByteScheduler-PS's pieces (dtrain-commbench --partition-bytes), over
 * a worker and a server rank a node or over workers and servers of their own; m->ranks as
 * measured_allreduce says. 0, or -1 with why. */
static int pieces_from_json(json_t *doc, const char *path, const char *op, struct measured_allreduce *m, char *why,
                            size_t size)
{
    json_t *partition = json_object_get(doc, "partition_bytes");
    m->colocated = op && strcmp(op, "colocated-ranks") == 0;
    if (!json_is_integer(partition) || json_integer_value(partition) <= 0 ||
        (!m->colocated && !(op && strcmp(op, "pushpull") == 0)) || m->ranks < 2 || (m->colocated && m->ranks % 2))
        return snprintf(why, size, "%s: expected dtrain-commbench --partition-bytes N --op pushpull or --op "
                        "colocated-ranks --json over 2 to %d ranks (\"op\", \"ranks\", \"partition_bytes\", \"rows\")",
                        path, LINK_MAX_RANKS), -1;
    m->partition_bytes = (double)json_integer_value(partition);
    m->ranks = m->colocated ? m->ranks / 2 : m->ranks;
    int points = curve_of(path, json_object_get(doc, "rows"), "time_us", 1, 1, m->curve, why, size);
    if (points >= 0 && points < 2)
        return snprintf(why, size, "%s: fewer than 2 sizes measured", path), -1;
    if (points < 0)
        return -1;
    m->cost = (struct link_cost){.curve = m->curve, .points = points};
    return 0;
}

int measured_from_json(json_t *doc, const char *path, const char *want, struct measured_allreduce *m, char *why,
                       size_t size)
{
    const char *op = json_string_value(json_object_get(doc, "op"));
    json_t *ranks = json_object_get(doc, "ranks");
    /* checked before the cast: 2^32 + 2 ranks must not become 2 */
    m->ranks = json_is_integer(ranks) && json_integer_value(ranks) >= 2 && json_integer_value(ranks) <= LINK_MAX_RANKS
                   ? (int)json_integer_value(ranks) : 0;
    if (strcmp(want, "pieces") == 0)
        return pieces_from_json(doc, path, op, m, why, size);
    if (json_object_get(doc, "partition_bytes"))   /* bytescheduler-ps's traffic, not a part per server at once */
        return snprintf(why, size, "%s: a round in pieces under a credit (dtrain-commbench --partition-bytes): expected "
                        "the round of a part per server (without --partition-bytes; --servers-pieces reads this one)",
                        path), -1;
    bool pairs = op && strcmp(want, "colocated") == 0 && strcmp(op, "colocated-ranks") == 0;
    if (pairs)   /* a worker rank and a server rank a node: a round over ranks / 2 nodes */
        m->ranks = m->ranks % 2 == 0 ? m->ranks / 2 : 0;
    int points = op && (strcmp(op, want) == 0 || pairs) && m->ranks >= (pairs ? 1 : 2)
                     ? curve_of(path, json_object_get(doc, "rows"), "time_us", 1, 1, m->curve, why, size)
                     : (snprintf(why, size, "%s: expected dtrain-commbench --op %s --json over 2 to %d ranks%s (\"op\", "
                                 "\"ranks\", \"rows\")", path, want, LINK_MAX_RANKS,
                                 strcmp(want, "colocated") ? "" : ", or --op colocated-ranks over an even number"), -1);
    if (points >= 0 && points < 2)
        return snprintf(why, size, "%s: fewer than 2 sizes measured", path), -1;
    int streamed = points >= 2 ? streamed_of(doc, path, "time_us_inflight", 1, 1, m->streamed, why, size) : 0;
    int alone = streamed >= 2 ? streamed_of(doc, path, "time_us_alone", 1, 1, m->alone, why, size) : 0;
    if (points < 0 || streamed < 0 || alone < 0)
        return -1;
    m->cost = (struct link_cost){.curve = m->curve, .points = points};
    set_streamed(doc, &m->cost, m->streamed, streamed, m->alone, alone);
    return 0;
}

int allreduce_from_json(json_t *doc, const char *path, struct measured_allreduce *m, char *why, size_t size)
{
    return measured_from_json(doc, path, "allreduce", m, why, size);
}

int link_parse_measured(const char *path, const char *op, struct measured_allreduce *m, char *why, size_t size)
{
    json_error_t jerr;
    json_t *doc = json_load_file(path, 0, &jerr);
    if (!doc)
        return snprintf(why, size, "%s:%d: %s", path, jerr.line, jerr.text), -1;
    int rc = measured_from_json(doc, path, op, m, why, size);
    json_decref(doc);
    return rc;
}
