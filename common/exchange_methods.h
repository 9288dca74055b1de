/* exchange_methods.h - the gradient-exchange methods by name: what each is and what it takes. The
 * one list that dtrain-train's --comm, --help and messages, the run records, the cost model of
 * dtrain-analyze predict and the scripts (dtrain-train --list-methods) read. The trainer's
 * implementations (trainer/exchange/exchange.c) and the cost model's step functions
 * (analysis/costmodel.c) are tables of their own keyed by these names; tests check that the three
 * list the same methods in the same order.
 *
 * The words, as every file of the exchange uses them:
 *   method      how a step's gradients become every worker's mean (this table's rows)
 *   a2a         all-to-all: the workers sum among themselves with allreduce
 *   ps          parameter servers: workers push gradients to server ranks and pull the sums back
 *   group       consecutive layers whose gradients travel together (MG-WFBP's merging)
 *   span        a range of the gradient buffer the communication thread plans as one unit and
 *               waits for as one: a layer (WFBP, ByteScheduler), a group (MG-WFBP), a server's
 *               share (parameter servers)
 *   partition   a slice of a span of at most --partition-bytes, the unit that is sent (BytePS's
 *               word); a span smaller than that is one partition
 *   transfer    one message the method hands the transport: BSP's whole-buffer allreduce, or one
 *               partition's allreduce, push or pull (exchange_stats.transfers counts them)
 *   credit      ByteScheduler's bytes allowed in flight at once
 *   pieces      trainer/exchange/pieces.c: the spans, partitions and communication thread of one
 *               step, shared by every method but BSP */
#ifndef EXCHANGE_METHODS_H
#define EXCHANGE_METHODS_H

#include <stdbool.h>
#include <stddef.h>

/* The defaults in the reference method comparison's configuration (BytePS's PARTITION_BYTES,
 * ByteScheduler's credit) and one server. */
#define METHOD_PARTITION_BYTES 4096000
#define METHOD_CREDIT_BYTES 16000000
#define METHOD_PS_SERVERS 1

struct method_facts {
    const char *name;          /* as --comm, the run record and predict write it: "bsp-a2a" */
    const char *aliases;       /* further names --comm takes, comma-separated ("" for none) */
    const char *title;         /* as comparison tables write it: "ByteScheduler-A2A" */
    const char *help;          /* what it does, for --help (one sentence, no full stop) */
    bool servers;              /* has parameter servers (--ps-servers, --ps-colocated) */
    bool takes_partition;      /* --partition-bytes is its */
    bool takes_credit;         /* --credit-bytes is its */
    bool takes_threshold;      /* --comm-threshold is its */
    bool over_nccl;            /* on GPU ranks its gradients can go over NCCL (--gpu-transport nccl;
                                  every method also runs there host-staged: --gpu-transport host) */
};

/* The methods, in the order tables list them, and their number. */
extern const struct method_facts method_list[];
extern const int method_count;

/* The method called name or one of its aliases, ignoring case; NULL if none. */
const struct method_facts *method_find(const char *name);

/* The index of a method in method_list. */
int method_index(const struct method_facts *m);

/* The names of the methods for which `which` is true (all when NULL) joined by `sep` into text
 * ("bsp-ps, wfbp-ps or bytescheduler-ps" with sep ", " and last " or "; last NULL: sep). Returns
 * text. */
const char *method_names(bool (*which)(const struct method_facts *m), const char *sep, const char *last,
                         char *text, size_t size);

/* Filters for method_names. */
bool method_has_servers(const struct method_facts *m);
bool method_takes_partition(const struct method_facts *m);
bool method_takes_credit(const struct method_facts *m);

#endif
