/* comm_nccl.c - NCCL for the gradient exchange of GPU ranks (see comm_nccl.h). */
#include "comm_nccl.h"

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdlib.h>
#include <string.h>

struct nccl_state {
    struct comm table;
    struct comm *host;
    ncclComm_t comm;
    cudaStream_t compute, stream;   /* the backend's, and NCCL's own */
    cudaEvent_t grads_ready, averaged;
};

static int nccl_fail(struct dt_err *err, const char *what, ncclResult_t rc)
{
    return dt_fail(err, "%s: %s", what, ncclGetErrorString(rc));
}

static int cuda_fail(struct dt_err *err, const char *what, cudaError_t rc)
{
    return dt_fail(err, "%s: %s", what, cudaGetErrorString(rc));
}

/* The backward pass's kernels finish, NCCL reduces on its stream, the optimizer waits for it. */
static int nccl_allreduce(struct comm *c, float *buf, size_t count, enum comm_op op, struct dt_err *err)
{
    struct nccl_state *s = c->state;
    cudaError_t crc;
    ncclResult_t nrc;
    if ((crc = cudaEventRecord(s->grads_ready, s->compute)) != cudaSuccess ||
        (crc = cudaStreamWaitEvent(s->stream, s->grads_ready, 0)) != cudaSuccess)
        return cuda_fail(err, "ordering the gradient exchange", crc);
    if ((nrc = ncclAllReduce(buf, buf, count, ncclFloat, op == COMM_AVG ? ncclAvg : ncclSum, s->comm, s->stream)) != ncclSuccess)
        return nccl_fail(err, "ncclAllReduce", nrc);
    if ((crc = cudaEventRecord(s->averaged, s->stream)) != cudaSuccess ||
        (crc = cudaStreamWaitEvent(s->compute, s->averaged, 0)) != cudaSuccess)
        return cuda_fail(err, "ordering the gradient exchange", crc);
    return 0;
}

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

struct comm *comm_nccl_create(struct comm *host, void *compute_stream, struct dt_err *err)
{
    struct nccl_state *s = calloc(1, sizeof *s);
    if (!s)
        return dt_fail(err, "out of memory"), NULL;
    s->host = host;
    s->compute = compute_stream;
    ncclUniqueId id;
    ncclResult_t nrc = ncclSuccess;
    cudaError_t crc;
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
    if ((crc = cudaStreamCreateWithFlags(&s->stream, cudaStreamNonBlocking)) != cudaSuccess ||
        (crc = cudaEventCreateWithFlags(&s->grads_ready, cudaEventDisableTiming)) != cudaSuccess ||
        (crc = cudaEventCreateWithFlags(&s->averaged, cudaEventDisableTiming)) != cudaSuccess) {
        cuda_fail(err, "NCCL's stream", crc);
        comm_nccl_destroy(&s->table);
        return NULL;
    }
    /* No iallreduce, test/wait or split yet (NCCL per layer and ncclCommSplit are not built). */
    s->table = (struct comm){.name = "nccl", .rank = host->rank, .world = host->world, .state = s,
                             .device_buffers = true, .allreduce = nccl_allreduce, .broadcast = host_broadcast,
                             .allgather = host_allgather, .sum_long = host_sum_long, .min_max_u64 = host_min_max,
                             .send = host_send, .recv = host_recv, .destroy = comm_nccl_destroy,
                             .abort = host_abort, .health = nccl_health, .finalize = nccl_finalize};
    memcpy(s->table.hostname, host->hostname, sizeof s->table.hostname);
    return &s->table;
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
    if (s->stream)
        cudaStreamDestroy(s->stream);
    free(s);
}
