/* comm_nccl.c - NCCL for the gradient exchange of GPU ranks (see comm_nccl.h). */
#include "trainer/comm/comm_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

struct nccl_state {
    struct comm table;
    struct comm *host;
    bool owns_host;            /* a split's host comm is its own split of the parent's */
    ncclComm_t comm;
    int device;                /* the rank's GPU: made current by calls from other threads */
    cudaStream_t compute, stream;   /* the backend's, and NCCL's own */
    cudaEvent_t grads_ready, averaged;
    pthread_mutex_t marks_lock;     /* marks: recorded on the rank's thread, waited for on the comm's */
    cudaEvent_t *marks;        /* mark_ready's events, by mark */
    int mark_count;
};

static int nccl_fail(struct dt_err *err, const char *what, ncclResult_t rc)
{
    return dt_fail(err, "%s: %s", what, ncclGetErrorString(rc));
}

static int cuda_fail(struct dt_err *err, const char *what, cudaError_t rc)
{
    return dt_fail(err, "%s: %s", what, cudaGetErrorString(rc));
}

static cudaError_t wait_for_gradients(struct nccl_state *s, int mark);

/* The backward pass's kernels finish, NCCL reduces on its stream, the optimizer waits for it. */
static int nccl_allreduce(struct comm *c, float *buf, size_t count, enum comm_op op, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    cudaError_t crc;
    ncclResult_t nrc;
    if ((crc = wait_for_gradients(s, 0)) != cudaSuccess)   /* all compute queued so far */
        return cuda_fail(err, "ordering the gradient exchange", crc);
    if ((nrc = ncclAllReduce(buf, buf, count, ncclFloat, op == COMM_AVG ? ncclAvg : ncclSum, s->comm, s->stream)) != ncclSuccess)
        return nccl_fail(err, "ncclAllReduce", nrc);
    if ((crc = cudaEventRecord(s->averaged, s->stream)) != cudaSuccess ||
        (crc = cudaStreamWaitEvent(s->compute, s->averaged, 0)) != cudaSuccess)
        return cuda_fail(err, "ordering the gradient exchange", crc);
    return 0;
}

/* ---------- per-layer allreduces (a communication thread's, exchange/comm_thread.h) ---------- */

static int nccl_mark_ready(struct comm *c, int mark, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    cudaError_t crc = cudaSuccess;
    pthread_mutex_lock(&s->marks_lock);
    if (mark >= s->mark_count) {
        int count = mark + 64;
        cudaEvent_t *grown = realloc(s->marks, (size_t)count * sizeof *grown);
        if (grown) {
            s->marks = grown;
            for (; s->mark_count < count && crc == cudaSuccess; s->mark_count++)
                crc = cudaEventCreateWithFlags(&s->marks[s->mark_count], cudaEventDisableTiming);
        }
        if (!grown || crc != cudaSuccess) {
            pthread_mutex_unlock(&s->marks_lock);
            return grown ? cuda_fail(err, "an event for a layer's gradients", crc) : dt_fail(err, "out of memory");
        }
    }
    crc = cudaEventRecord(s->marks[mark], s->compute);
    pthread_mutex_unlock(&s->marks_lock);
    return crc == cudaSuccess ? 0 : cuda_fail(err, "marking a layer's gradients ready", crc);
}

/* NCCL's stream waits for the compute a request's mark names (or, without one, all queued so far). */
static cudaError_t wait_for_gradients(struct nccl_state *s, int mark)
{
    if (mark <= 0) {
        cudaError_t crc = cudaEventRecord(s->grads_ready, s->compute);
        return crc == cudaSuccess ? cudaStreamWaitEvent(s->stream, s->grads_ready, 0) : crc;
    }
    pthread_mutex_lock(&s->marks_lock);
    cudaError_t crc = mark < s->mark_count ? cudaStreamWaitEvent(s->stream, s->marks[mark], 0) : cudaErrorInvalidValue;
    pthread_mutex_unlock(&s->marks_lock);
    return crc;
}

/* The mean (ncclAvg: sums_are_means) of every rank's buf, queued on NCCL's stream after the
 * gradients it reads; req holds an event recorded after it. */
static int nccl_iallreduce(struct comm *c, float *buf, size_t count, struct comm_request *req, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    cudaEvent_t done = NULL;
    cudaError_t crc;
    ncclResult_t nrc;
    cudaSetDevice(s->device);   /* the communication thread's calls go to the rank's GPU */
    if ((crc = wait_for_gradients(s, req->ready_mark)) != cudaSuccess)
        return cuda_fail(err, "ordering a layer's allreduce after its gradients", crc);
    if ((nrc = ncclAllReduce(buf, buf, count, ncclFloat, ncclAvg, s->comm, s->stream)) != ncclSuccess)
        return nccl_fail(err, "ncclAllReduce", nrc);
    if ((crc = cudaEventCreateWithFlags(&done, cudaEventDisableTiming)) != cudaSuccess ||
        (crc = cudaEventRecord(done, s->stream)) != cudaSuccess) {
        if (done)
            cudaEventDestroy(done);
        return cuda_fail(err, "an event after a layer's allreduce", crc);
    }
    req->handle[0] = (uint64_t)(uintptr_t)done;
    req->handle[1] = 0;   /* not yet seen complete */
    return 0;
}

/* Whether req has completed (its event is then freed, and it stays complete). */
static int request_done(struct comm_request *req, bool wait, bool *done, struct dt_err *err)
{
    *done = req->handle[1] != 0;
    if (*done)
        return 0;
    cudaEvent_t event = (cudaEvent_t)(uintptr_t)req->handle[0];
    cudaError_t crc = wait ? cudaEventSynchronize(event) : cudaEventQuery(event);
    if (crc == cudaErrorNotReady)
        return 0;
    if (crc != cudaSuccess)
        return cuda_fail(err, "a layer's allreduce", crc);
    cudaEventDestroy(event);
    req->handle[1] = 1;
    *done = true;
    return 0;
}

static int nccl_test_all(struct comm *c, struct comm_request *reqs, int n, bool *done, struct dt_err *err)
{
    (void)c;
    *done = true;
    for (int i = 0; i < n; i++) {
        bool one;
        if (request_done(&reqs[i], false, &one, err) < 0)
            return -1;
        *done = *done && one;
    }
    return 0;
}

static int nccl_wait_all(struct comm *c, struct comm_request *reqs, int n, struct dt_err *err)
{
    (void)c;
    for (int i = 0; i < n; i++) {
        bool done;
        if (request_done(&reqs[i], true, &done, err) < 0)
            return -1;
    }
    return 0;
}

static int nccl_drain(struct comm *c, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    cudaError_t crc = cudaStreamSynchronize(s->stream);
    return crc == cudaSuccess ? 0 : cuda_fail(err, "waiting for NCCL's stream", crc);
}

static int nccl_split(struct comm *c, int color, int key, struct comm **sub, struct dt_err *err);

static int host_broadcast(struct comm *c, void *buf, size_t bytes, int root, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    return s->host->broadcast(s->host, buf, bytes, root, err);
}

static int host_allgather(struct comm *c, const void *mine, size_t bytes, void *all, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    return s->host->allgather(s->host, mine, bytes, all, err);
}

static int host_sum_long(struct comm *c, long *value, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    return s->host->sum_long(s->host, value, err);
}

static int host_min_max(struct comm *c, unsigned long long value, unsigned long long *lo, unsigned long long *hi,
                        struct dt_err *err)
{
    struct nccl_state *s = c->state;
    return s->host->min_max_u64(s->host, value, lo, hi, err);
}

static int host_send(struct comm *c, const void *buf, size_t bytes, int peer, int tag, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    return s->host->send(s->host, buf, bytes, peer, tag, err);
}

static int host_recv(struct comm *c, void *buf, size_t bytes, int peer, int tag, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    return s->host->recv(s->host, buf, bytes, peer, tag, err);
}

/* NCCL's asynchronous error (ncclCommGetAsyncError may be called from any thread): a remote peer
 * gone, a network error, found while the collective's kernels spin on the GPU. */
static int nccl_health(struct comm *c, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    ncclResult_t state = ncclSuccess, nrc = ncclCommGetAsyncError(s->comm, &state);
    if (nrc != ncclSuccess)
        return nccl_fail(err, "ncclCommGetAsyncError", nrc);
    if (state != ncclSuccess && state != ncclInProgress)
        return nccl_fail(err, "NCCL failed in a collective under way", state);
    return 0;
}

static void host_abort(struct comm *c, int status)
{
    struct nccl_state *s = c->state;
    ncclCommAbort(s->comm);
    s->host->abort(s->host, status);
}

static void nccl_finalize(struct comm *c)
{
    comm_nccl_destroy(c);
}

/* The comm around s's initialised NCCL communicator: its stream, events and table (on failure s
 * is freed). */
static struct comm *wrap_nccl_comm(struct nccl_state *s, struct dt_err *err)
{
    cudaError_t crc;
    cudaGetDevice(&s->device);
    pthread_mutex_init(&s->marks_lock, NULL);
    s->table.state = s;
    if ((crc = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (crc = cudaEventCreateWithFlags(&s->grads_ready, cudaEventDisableTiming)) != cudaSuccess ||
        (crc = cudaEventCreateWithFlags(&s->averaged, cudaEventDisableTiming)) != cudaSuccess) {
        cuda_fail(err, "NCCL's stream", crc);
        comm_nccl_destroy(&s->table);
        return NULL;
    }
    s->table = (struct comm){.name = "nccl", .rank = s->host->rank, .world = s->host->world, .state = s,
                             .device_buffers = true, .thread_safe = true, .sums_are_means = true,
                             .allreduce = nccl_allreduce, .iallreduce_sum = nccl_iallreduce,
                             .test_all = nccl_test_all, .wait_all = nccl_wait_all, .broadcast = host_broadcast,
                             .allgather = host_allgather, .sum_long = host_sum_long, .min_max_u64 = host_min_max,
                             .send = host_send, .recv = host_recv, .split = nccl_split, .destroy = comm_nccl_destroy,
                             .mark_ready = nccl_mark_ready, .drain = nccl_drain, .abort = host_abort,
                             .health = nccl_health, .finalize = nccl_finalize};
    memcpy(s->table.hostname, s->host->hostname, sizeof s->table.hostname);
    return &s->table;
}

struct comm *comm_nccl_create(struct comm *host, void *compute_stream, struct dt_err *err)
{
    struct nccl_state *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(err, "out of memory"), NULL;
    s->host = host;
    s->compute = compute_stream;
    ncclUniqueId id;
    ncclResult_t nrc = ncclSuccess;
    if (host->rank == 0 && (nrc = ncclGetUniqueId(&id)) != ncclSuccess) {
        nccl_fail(err, "ncclGetUniqueId", nrc);
        memset(&id, 0, sizeof id);   /* the others still take part in the broadcast */
    }
    long bad = nrc != ncclSuccess;   /* every rank learns whether rank 0 has an id to share */
    int rc = host->broadcast(host, &id, sizeof id, 0, err);
    if (rc == 0)
        rc = host->sum_long(host, &bad, err);
    if (rc == 0 && bad)
        rc = host->rank == 0 ? -1 : dt_fail(err, "rank 0 could not make an NCCL id");
    if (rc == 0 && (nrc = ncclCommInitRank(&s->comm, host->world, id, host->rank)) != ncclSuccess)
        rc = nccl_fail(err, "ncclCommInitRank", nrc);
    if (rc < 0) {
        free(s);
        return NULL;
    }
    return wrap_nccl_comm(s, err);
}

/* A communication thread's own communicator (pieces.c): NCCL's split, and the host comm's beside
 * it for the thread's broadcasts (rank 0's choice of order). Every rank of c calls it. */
static int nccl_split(struct comm *c, int color, int key, struct comm **sub, struct dt_err *err)
{
    struct nccl_state *s = c->state, *t = calloc(1, sizeof *t);
    if (!t)
        return dt_fail(err, "out of memory");
    t->compute = s->compute;
    if (s->host->split(s->host, color, key, &t->host, err) < 0) {
        free(t);
        return -1;
    }
    t->owns_host = true;
    cudaSetDevice(s->device);
    ncclResult_t nrc = ncclCommSplit(s->comm, color, key, &t->comm, NULL);
    if (nrc != ncclSuccess) {
        t->host->destroy(t->host);
        free(t);
        return nccl_fail(err, "ncclCommSplit", nrc);
    }
    *sub = wrap_nccl_comm(t, err);
    return *sub ? 0 : -1;
}

void comm_nccl_destroy(struct comm *c)
{
    if (!c)
        return;
    /* a half-made one has no state pointer yet: its table is the state's first member */
    struct nccl_state *s = c->state ? c->state : (struct nccl_state *)c;
    if (s->stream)
        cudaStreamSynchronize(s->stream);
    if (s->comm) {   /* finalize first: it completes what is still queued; destroy only frees */
        ncclCommFinalize(s->comm);
        ncclCommDestroy(s->comm);
    }
    if (s->grads_ready)
        cudaEventDestroy(s->grads_ready);
    if (s->averaged)
        cudaEventDestroy(s->averaged);
    for (int i = 0; i < s->mark_count; i++)
        cudaEventDestroy(s->marks[i]);
    free(s->marks);
    pthread_mutex_destroy(&s->marks_lock);
    if (s->stream)
        cudaStreamDestroy(s->stream);
    if (s->owns_host)
        s->host->destroy(s->host);
    free(s);
}
