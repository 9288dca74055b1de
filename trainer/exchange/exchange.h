/* exchange.h - how a step's gradients become the mean of every worker's: the gradient-exchange
 * methods (BSP, WFBP, MG-WFBP, ByteScheduler, parameter servers) as one table behind one
 * interface. The loop hands the exchange gradients as backward finishes them and asks it, after
 * backward, for the mean; the method decides what goes over the transport (comm.h) when. A method
 * may also take the update over (ByteScheduler): it then applies each layer's update itself,
 * just before that layer's next forward pass, and the loop settles it before anything else reads
 * the parameters. Each method's name, help and options are a row of the shared table
 * (common/exchange_methods.h, whose header is the glossary of the words used here: method, a2a,
 * ps, group, span, partition, transfer, credit); this file's table holds their implementations. */
#ifndef EXCHANGE_H
#define EXCHANGE_H

#include <stdbool.h>
#include <stddef.h>

#include "trainer/comm/comm.h"
#include "common/dt_error.h"
#include "common/exchange_methods.h"
#include "trainer/nn/nn.h"
#include "trainer/exchange/staging.h"
#include "trainer/base/timeline.h"

struct exchange;
struct exchange_method;

/* The optimizer's step over params[first, first + count) from the mean gradients there (after
 * the loop's begin of the step). */
struct exchange_update {
    void (*call)(void *ctx, size_t first, size_t count);
    void *ctx;
};

/* Settings some methods take (zero: each method's default). */
struct exchange_options {
    bool threshold_set;        /* --comm-threshold given: */
    size_t threshold_bytes;    /* mg-wfbp fuses layers by size instead of its measured plan */
    int ps_servers;            /* parameter servers: the last ranks (0: EXCHANGE_PS_SERVERS) */
    bool ps_colocated;         /* parameter servers: instead, the last rank of every node */
    bool ps_node_sums_off;     /* parameter servers: every worker pushes its own (no node-local sums) */
    bool ps_node_sums_given;   /* --ps-node-sums was given (refused for other methods) */
    size_t partition_bytes;    /* the largest piece sent (0: EXCHANGE_PARTITION_BYTES) */
    size_t credit_bytes;       /* bytescheduler: bytes under way at once (0: EXCHANGE_CREDIT_BYTES) */
};

/* The defaults (exchange_methods.h says where they come from). */
#define EXCHANGE_PS_SERVERS METHOD_PS_SERVERS
#define EXCHANGE_PARTITION_BYTES METHOD_PARTITION_BYTES
#define EXCHANGE_CREDIT_BYTES METHOD_CREDIT_BYTES

/* The settings in force: the options', or the defaults where they gave none. */
size_t exchange_partition_bytes(const struct exchange_options *options);
size_t exchange_partition_floats(const struct exchange_options *options);   /* at least 1 */
size_t exchange_credit_bytes(const struct exchange_options *options);

/* The method's settings as the run record keeps them ("servers=1 partition=4096000",
 * "threshold=40000"; "" when it has none), into text. */
void exchange_describe_options(const struct exchange_method *method, const struct exchange_options *options,
                               char *text, size_t size);

/* A method's implementation. Its name, help and options are in the shared table
 * (exchange_methods.h), found by the same name. */
struct exchange_method {
    const char *name;          /* the key into method_list: "bsp-a2a" */
    bool needs_op_order;       /* sends from the end of the buffer as backward completes it */
    bool needs_thread;         /* has a communication thread: MPI must be thread-safe */
    /* Applies the update itself, layer by layer (exchange->update), instead of the loop after
     * finish: finish then returns before the mean exists. */
    bool updates_layerwise;
    /* Sets up x->state (x's other fields are filled). NULL: no state. */
    int (*create)(struct exchange *x, struct dt_err *err);
    /* A step's backward pass begins (before any grads_ready). NULL: nothing to do. */
    void (*begin_backward)(struct exchange *x);
    /* Backward has made gradients [first, x->count) final (grads_ready of nn.h). */
    int (*grads_ready)(struct exchange *x, size_t first, struct dt_err *err);
    /* Before the forward pass of the op whose parameters are [first, first + count): returns when
     * they hold this step's update (layer-wise waits, as ByteScheduler's). NULL: always ready. */
    int (*before_forward)(struct exchange *x, size_t first, size_t count, struct dt_err *err);
    /* After backward: returns with every gradient the workers' mean (or, updating layer-wise,
     * with the step's exchange under way). */
    int (*finish)(struct exchange *x, struct dt_err *err);
    /* Updating layer-wise: waits for every transfer and applies every update still due. */
    int (*settle)(struct exchange *x, struct dt_err *err);
    /* A server rank's whole job (parameter servers): returns when the workers are done. NULL:
     * every rank is a worker. */
    int (*serve)(struct exchange *x, struct dt_err *err);
    /* On the workers, after the last step: lets the servers' serve return. NULL: nothing to do. */
    int (*close)(struct exchange *x, struct dt_err *err);
    void (*destroy)(struct exchange *x);
};

/* What an exchange did, counted over the run: the tests assert the method ran as it says. */
struct exchange_stats {
    long steps;                /* finished */
    long transfers;            /* transfers started (one allreduce, or one per partition) */
    double floats;             /* gradient elements handed to the transport */
    char detail[192];          /* what the method decided, for the summary line ("" if nothing) */
    const char *node_sums;     /* parameter servers with a node of several workers: "on" (they summed
                                  first) or "off"; NULL otherwise */
};

/* The ranks that train (compute gradients, read shards, evaluate): all of them for allreduce
 * methods, the world without its servers for a parameter server. */
struct workers {
    struct comm *comm;         /* among the workers only (host memory) */
    int rank, count;
};

struct exchange {
    const struct exchange_method *method;
    struct comm *transport;    /* the gradients': NCCL for device buffers, else the host's */
    struct workers workers;
    const struct model *model;
    struct exchange_options options;
    float *grads;              /* the flat gradient buffer (device memory over NCCL) */
    size_t count;
    struct exchange_stats stats;
    void *state;               /* the method's */
    bool serving;              /* this rank is a server: it runs serve instead of training */
    struct timeline *timeline; /* where methods record their transfers (NULL: nowhere) */
    bool failed;               /* a hook's call failed: finish reports it */
    struct dt_err pending;
    struct params_needed forward_hook;
    struct exchange_update update;   /* how a layer-wise method applies an update (the loop's) */
    /* Device gradients exchanged from host memory (staging.h; NULL: the method works on the
     * gradient buffer itself): grads is then the host copy, and update brings each span's mean
     * back before the loop's update (device_update) runs on it. */
    struct staging *staging;
    struct exchange_update device_update;
};

/* The implementations, in method_list's order (tests check it), and their number. */
extern const struct exchange_method *const exchange_methods[];
extern const int exchange_method_count;

/* The implementation of the method called name or one of its aliases (method_find), ignoring
 * case; NULL if none. */
const struct exchange_method *exchange_find(const char *name);

/* The shared table's row of an implementation: its help, aliases and options. */
const struct method_facts *exchange_facts(const struct exchange_method *method);

/* An exchange of grads[0, count) among the ranks of host. Where the gradients live on a device:
 * device_transport (not NULL) moves them there (NCCL), or, with staged (not NULL), they are copied
 * to host memory span by span and the method exchanges that copy over host (staging.h). Refuses a
 * model whose parameters the method cannot send in order, and a transport without what the
 * method needs. (A world of one exchanges nothing: the caller stages only a larger one.) 0 or -1
 * with err. */
int exchange_create(struct exchange *x, const struct exchange_method *method, const struct exchange_options *options,
                    struct comm *host, struct comm *device_transport, const struct staging_device *staged,
                    const struct model *model, float *grads, size_t count, struct dt_err *err);

/* Where a layer-wise method's updates go: the loop's update of [first, first + count), after the
 * span's mean is back on the device when staged. */
void exchange_set_update(struct exchange *x, struct exchange_update update);

/* The workers' mean from the sums of a non-blocking allreduce over buf[0, count): divides by the
 * workers on the host, or nothing where the transport leaves means already (NCCL's ncclAvg on
 * device memory, which a host cannot scale). The methods call it instead of comm_scale. */
void exchange_mean(const struct exchange *x, float *buf, size_t count);

/* How a GPU rank's gradients traveled, for the summary and the record: "host" when staged, the
 * device transport's name ("nccl"), "" on CPU ranks exchanging their own buffer. */
const char *exchange_gpu_transport(const struct exchange *x);

/* The spans a staged exchange of model may be handed a step (exchange_create's, and the device's
 * copy events): each layer's, and one more for what finish sends when backward did not. */
int exchange_staged_spans(const struct model *model);
void exchange_destroy(struct exchange *x);

/* The hook model_backward_notify calls (nn.h): hands finished gradients to the method; an error is
 * kept until exchange_finish. Asked for just before backward starts (the method may time it). */
struct grads_ready exchange_backward_hook(struct exchange *x);

/* The hook model_forward calls before each layer with parameters (nn.h), or NULL when the method
 * does not wait there (every parameter is updated before the step's forward pass begins). */
const struct params_needed *exchange_forward_hook(struct exchange *x);

/* After backward: every gradient is the workers' mean. A world of one exchanges nothing (a GPU's
 * gradients never reach a host collective). 0, or -1 with err (then the job must be aborted: the
 * other ranks' transfers are not waited for). */
int exchange_finish(struct exchange *x, struct dt_err *err);

/* Whether the method applies the updates itself (exchange_method.updates_layerwise, and
 * somebody to exchange with): then the loop does not update after exchange_finish. */
bool exchange_updates_itself(const struct exchange *x);

/* Every update due is applied: before the loop reads the parameters outside a step (evaluation,
 * checkpoints, replica checks, the end). Nothing to do for most methods. 0 or -1 with err. */
int exchange_settle(struct exchange *x, struct dt_err *err);

/* A server rank's part (exchange->serving): serve until the workers close. 0 or -1 with err. */
int exchange_serve(struct exchange *x, struct dt_err *err);
/* On the workers after training: the servers may stop. 0 or -1 with err. */
int exchange_close(struct exchange *x, struct dt_err *err);

/* The methods (bsp.c, wfbp.c, mgwfbp.c, bytescheduler.c, ps.c). */
extern const struct exchange_method exchange_bsp, exchange_wfbp, exchange_mgwfbp, exchange_bytescheduler_a2a,
    exchange_bsp_ps, exchange_wfbp_ps, exchange_bytescheduler_ps;

#endif
