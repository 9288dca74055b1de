/* links.h - the links and allreduces dtrain-analyze predict is given, as the cost model's
 * link_cost (costmodel.h): "10gbit:25us", or dtrain-commbench --json's measured rows and fit
 * (formats/FORMAT.md). */
#ifndef LINKS_H
#define LINKS_H

#include <stdbool.h>
#include <stddef.h>

#include <jansson.h>

#include "analysis/costmodel.h"

#define CURVE_POINTS 64   /* dtrain-commbench measures at most 64 sizes */

/* "10gbit", "100Gbit", "400mbit", "12GB/s", "900MB/s" as bytes per second; -1 if not one. */
double link_parse_bandwidth(const char *text);

/* "25us", "1.5ms", "0.00001s" (or a bare number of seconds) as seconds; -1 if not one. */
double link_parse_latency(const char *text);

/* A measured link's curves (link->curve and link->streamed point into them). */
struct link_curves {
    struct link_point one[CURVE_POINTS];        /* a message alone */
    struct link_point streamed[CURVE_POINTS];   /* one of --inflight K under way */
    struct link_point alone[CURVE_POINTS];      /* one of them alone */
};

/* A link given as BANDWIDTH[:LATENCY] or a dtrain-commbench JSON file of 2 ranks across it, run
 * with --op op: "allreduce" (both directions loaded at once) or "pushpull" (a worker's push, then
 * its sum back: a direction at a time). Its messages' times: the measured table (into curves)
 * where it has 2 sizes or more and measured is set, with the times of many messages under way
 * where it was run with --inflight, else its alpha-beta fit. 0, or -1 with why. */
int link_parse(const char *text, const char *op, bool measured, struct link_cost *link, struct link_curves *curves,
               char *why, size_t size);
/* The JSON half of link_parse, on a parsed document (path names it in why). */
int link_from_json(json_t *doc, const char *path, const char *op, bool measured, struct link_cost *link,
                   struct link_curves *curves, char *why, size_t size);

/* What a measured link or allreduce may say: beyond these an input was edited by hand. */
#define LINK_MAX_BYTES 1e15
#define LINK_MAX_SECONDS 1e4
#define LINK_MAX_RANKS (1 << 20)

struct measured_allreduce {
    int ranks;
    /* op "pieces" (ByteScheduler-PS's traffic, dtrain-commbench --partition-bytes): the pieces'
     * bytes, and whether the servers sat beside the workers (--op colocated-ranks; ranks: nodes)
     * or on ranks of their own (--op pushpull; ranks: the workers and the servers) */
    double partition_bytes;
    bool colocated;
    struct link_cost cost;
    struct link_point curve[CURVE_POINTS];
    struct link_point streamed[CURVE_POINTS];   /* where measured with --inflight */
    struct link_point alone[CURVE_POINTS];      /* and its one alone */
};

/* A job size's operation as dtrain-commbench --op OP measured it over all its ranks: the allreduce
 * (predict --allreduce FILE; m->ranks its workers), the colocated servers' round (OP colocated,
 * --servers-round FILE; m->ranks its nodes: one rank a node, or with --op colocated-ranks, as
 * dtrain-train lays them out, a worker and a server rank a node), or ByteScheduler-PS's traffic
 * alone (OP pieces, --servers-pieces FILE: a round run with --partition-bytes, over a worker and a
 * server rank a node or over workers pushing to servers of their own); the file, or its parsed
 * document (path names it in why). 0, or -1 with why. */
int link_parse_measured(const char *path, const char *op, struct measured_allreduce *m, char *why, size_t size);
int measured_from_json(json_t *doc, const char *path, const char *op, struct measured_allreduce *m, char *why,
                       size_t size);
int allreduce_from_json(json_t *doc, const char *path, struct measured_allreduce *m, char *why, size_t size);

#endif
