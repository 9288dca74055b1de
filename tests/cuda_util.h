/* cuda_util.h - what the CUDA tests share: the GPU backends (fp32 and bf16), made once per
 * program, and the helpers that move and compare arrays. */
#ifndef CUDA_UTIL_H
#define CUDA_UTIL_H

#include <stdbool.h>
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

/* Image tensors in the layout `on` keeps them: up_image uploads an NCHW host tensor as NCHW, or
 * as NHWC where on->channels_last; down_image gives it back NCHW. nhwc_of and nchw_of transpose
 * on the host (new arrays). */
float *up_image(const float *x, int n, int c, int hw);
float *down_image(const float *d, int n, int c, int hw);
float *nhwc_of(const float *x, int n, int c, int hw);
float *nchw_of(const float *x, int n, int c, int hw);

/* One convolution shape on backend be against the reference, forward and backward, with or without
 * bias, overwriting or adding onto dx; its images in be's layout, its weights in PyTorch's. */
void check_conv(struct backend *be, struct conv_shape s, bool bias, bool accumulate, double tolerance);

/* max |a - b| / (1 + max |b|) over count values, against tolerance (a NaN on either side fails). */
void assert_close(const char *what, const float *got, const float *want, size_t count, double tolerance);

#endif
