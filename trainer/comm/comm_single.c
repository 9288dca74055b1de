/* comm_single.c - the transport of a world of one process (see comm.h): every collective is an
 * identity, point to point has no peer. */
#include "trainer/comm/comm.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int single_allreduce(struct comm *c, float *buf, size_t count, enum comm_op op, struct dt_err *err)
{
    (void)c, (void)buf, (void)count, (void)op, (void)err;
    return 0;
}

static int single_iallreduce_sum(struct comm *c, float *buf, size_t count, struct comm_request *req,
                                 struct dt_err *err)
{
    (void)c, (void)buf, (void)count, (void)err;
    memset(req, 0, sizeof *req);
    return 0;
}

static int single_test_all(struct comm *c, struct comm_request *reqs, int n, bool *done, struct dt_err *err)
{
    (void)c, (void)reqs, (void)n, (void)err;
    *done = true;
    return 0;
}

static int single_wait_all(struct comm *c, struct comm_request *reqs, int n, struct dt_err *err)
{
    (void)c, (void)reqs, (void)n, (void)err;
    return 0;
}

static int single_broadcast(struct comm *c, void *buf, size_t bytes, int root, struct dt_err *err)
{
    (void)c, (void)buf, (void)bytes, (void)root, (void)err;
    return 0;
}

static int single_allgather(struct comm *c, const void *mine, size_t bytes, void *all, struct dt_err *err)
{
    (void)c, (void)err;
    memcpy(all, mine, bytes);
    return 0;
}

static int single_sum_long(struct comm *c, long *value, struct dt_err *err)
{
    (void)c, (void)value, (void)err;
    return 0;
}

static int single_min_max(struct comm *c, unsigned long long value, unsigned long long *lo, unsigned long long *hi,
                          struct dt_err *err)
{
    (void)c, (void)err;
    *lo = *hi = value;
    return 0;
}

static int single_send(struct comm *c, const void *buf, size_t bytes, int peer, int tag, struct dt_err *err)
{
    (void)c, (void)buf, (void)bytes, (void)tag;
    return dt_fail(err, "send to rank %d: a world of one process has no peer", peer);
}

static int single_recv(struct comm *c, void *buf, size_t bytes, int peer, int tag, struct dt_err *err)
{
    (void)c, (void)buf, (void)bytes, (void)tag;
    return dt_fail(err, "receive from rank %d: a world of one process has no peer", peer);
}

/* Every split of one process is that process again. */
static int single_split(struct comm *c, int color, int key, struct comm **sub, struct dt_err *err)
{
    (void)color, (void)key, (void)err;
    *sub = c;
    return 0;
}

static void single_destroy(struct comm *c)
{
    (void)c;
}

static void single_abort(struct comm *c, int status)
{
    (void)c;
    exit(status);
}

struct comm *comm_single(void)
{
    static struct comm single = {
        .name = "single", .rank = 0, .world = 1, .thread_safe = true, .allreduce = single_allreduce,
        .iallreduce_sum = single_iallreduce_sum, .test_all = single_test_all, .wait_all = single_wait_all,
        .broadcast = single_broadcast, .allgather = single_allgather, .sum_long = single_sum_long,
        .min_max_u64 = single_min_max, .send = single_send, .recv = single_recv, .split = single_split,
        .destroy = single_destroy, .abort = single_abort, .finalize = single_destroy,
    };
    if (!single.hostname[0] && gethostname(single.hostname, sizeof single.hostname - 1) < 0)
        strcpy(single.hostname, "localhost");
    return &single;
}
