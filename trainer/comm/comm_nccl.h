/* comm_nccl.h - NCCL as a transport for device buffers (comm_nccl.c): ncclAllReduce (ncclSum or
 * ncclAvg) over device memory, on NCCL's own stream, ordered after the backward
 * pass and before the optimizer by events. The communicator is built once, its ncclUniqueId sent
 * from rank 0 over the host comm (MPI); every other collective stays the host comm's. */
#ifndef COMM_NCCL_H
#define COMM_NCCL_H

#include "trainer/comm/comm.h"

/* A comm whose allreduce takes device buffers, on the current CUDA device; compute_stream is
 * the stream the gradients are written on (backend_cuda_stream). NULL with err on failure (or
 * when built without CUDA). */
struct comm *comm_nccl_create(struct comm *host, void *compute_stream, struct dt_err *err);
void comm_nccl_destroy(struct comm *c);

#endif
