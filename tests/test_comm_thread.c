/* test_comm_thread.c - the communication thread beside a rank, over a transport of the test's own.
 * The rank makes each layer's gradients ready between the layers of its backward pass; while the
 * thread held its lock through MPI_Test, one call that waited on the network (up to 290 ms over the
 * shaped test link) held the backward pass with it. Here the transport's test waits until the test
 * lets it go, and the rank must make the next layer ready meanwhile. */
#include <errno.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include <cmocka.h>

#include "trainer/exchange/comm_thread.h"

/* The transport: test_all waits while `held`, telling the test it is inside. */
static struct {
    pthread_mutex_t lock;
    pthread_cond_t changed;
    bool held, inside, ready_returned;
    int started;
} fake = {PTHREAD_MUTEX_INITIALIZER, PTHREAD_COND_INITIALIZER, false, false, false, 0};

static int fake_test_all(struct comm *c, struct comm_request *reqs, int n, bool *done, struct dt_err *err)
{
    (void)c, (void)reqs, (void)n, (void)err;
    pthread_mutex_lock(&fake.lock);
    fake.inside = true;
    pthread_cond_broadcast(&fake.changed);
    while (fake.held)
        pthread_cond_wait(&fake.changed, &fake.lock);
    fake.inside = false;
    pthread_mutex_unlock(&fake.lock);
    *done = true;
    return 0;
}

static int fake_start(void *ctx, struct comm *comm, struct comm_thread_transfer *t, struct dt_err *err)
{
    (void)ctx, (void)comm, (void)err;
    pthread_mutex_lock(&fake.lock);
    fake.started++;
    pthread_mutex_unlock(&fake.lock);
    t->nreqs = 1;
    return 0;
}

/* Waits (fake.lock held) until *flag, at most 10 s: false if it never came (the bound only turns a
 * hang into a failure; nothing here is timed). */
static bool wait_until(const bool *flag)
{
    struct timespec until;
    clock_gettime(CLOCK_REALTIME, &until);
    until.tv_sec += 10;
    while (!*flag)
        if (pthread_cond_timedwait(&fake.changed, &fake.lock, &until) == ETIMEDOUT)
            return *flag;
    return true;
}

static void *make_first_layer_ready(void *thread)
{
    comm_thread_ready_from(thread, 0);
    pthread_mutex_lock(&fake.lock);
    fake.ready_returned = true;
    pthread_cond_broadcast(&fake.changed);
    pthread_mutex_unlock(&fake.lock);
    return NULL;
}

static void test_a_layer_is_made_ready_while_the_thread_is_in_the_transport(void **state)
{
    (void)state;
    struct comm comm = {.name = "fake", .rank = 0, .world = 1, .thread_safe = true, .test_all = fake_test_all};
    struct comm_thread_ops ops = {.start = fake_start, .fifo = true, .what = "allreduce"};
    size_t first[2] = {0, 10}, count[2] = {10, 10};
    struct comm_thread *thread;
    struct dt_err err;
    assert_int_equal(comm_thread_create(&thread, &comm, first, count, 2, 0, 0, ops, &err), 0);
    comm_thread_begin_step(thread, NULL);

    fake.held = true;
    comm_thread_ready_from(thread, 10);   /* the last layer: started, then tested */
    pthread_mutex_lock(&fake.lock);
    bool inside = wait_until(&fake.inside);
    pthread_mutex_unlock(&fake.lock);
    assert_true(inside);

    pthread_t rank;
    assert_int_equal(pthread_create(&rank, NULL, make_first_layer_ready, thread), 0);
    pthread_mutex_lock(&fake.lock);
    bool returned = wait_until(&fake.ready_returned);
    fake.held = false;   /* let the transport go either way, so that a failure ends */
    pthread_cond_broadcast(&fake.changed);
    pthread_mutex_unlock(&fake.lock);
    pthread_join(rank, NULL);
    assert_true(returned);

    assert_int_equal(comm_thread_wait_all(thread, &err), 0);
    assert_int_equal(fake.started, 2);
    assert_int_equal(comm_thread_stats(thread).started, 2);
    assert_true(comm_thread_destroy(thread));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_a_layer_is_made_ready_while_the_thread_is_in_the_transport),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
