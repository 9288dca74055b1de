/* cuda_util.h - what the CUDA tests share: the GPU backends (fp32 and bf16), made once per
 * program, and the helpers that move and compare arrays. */
#ifndef CUDA_UTIL_H
#define CUDA_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "trainer/backend/backend.h"

/* NULL without a GPU: fp32 (TF32) and bf16, each NCHW and channels-last (NHWC images) */
extern struct backend *gpu, *gpu_bf16, *gpu_cl, *gpu_cl_bf16;
extern struct backend *on;   /* the backend whose stream up() and down() use: gpu unless a test says */

/* cmocka group set-up and tear-down: prints the CUDA libraries loaded, makes the four backends. */
int cuda_setup(void **state);
int cuda_teardown(void **state);

/* Ends the test as skipped, with a visible line, where there is no GPU; fails it where there is
 * one that cannot be used (a skip there would hide a broken GPU machine). */
void require_gpu(void);

/* n normally distributed floats from seed (free them). */
float *random_floats(size_t n, uint64_t seed);

/* A device copy of host data (on's memory). */
void *up(const void *host, size_t bytes);

/* The device's array back on the host (freed by the caller), after checking nothing failed. */
float *down(const void *device, size_t count);

/* max |a - b| / (1 + max |b|) over count values, against tolerance (a NaN on either side fails). */
void assert_close(const char *what, const float *got, const float *want, size_t count, double tolerance);

#endif
