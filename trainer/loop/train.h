/* train.h - one training run: data, model, backend and optimizer put together, the reference-format
 * log lines on the way, the final numbers at the end. */
#ifndef TRAIN_H
#define TRAIN_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "trainer/backend/backend_cuda.h"
#include "trainer/comm/comm.h"
#include "common/dt_error.h"
#include "trainer/exchange/exchange.h"
#include "trainer/loop/watchdog.h"

/* BERT's hidden dropout, the language models' default. */
#define TRAIN_DEFAULT_DROPOUT 0.1f

struct train_config {
    const char *model, *dataset, *data_dir, *optimizer, *backend;
    int batch, epochs, threads, log_every;
    int gpu;                   /* backend "cuda": the device, an index among those CUDA sees */
    bool bf16;                 /* backend "cuda": bf16 compute, fp32 master weights (--precision bf16) */
    enum conv_algo conv_algo;  /* backend "cuda": how cuDNN's convolution algorithms are chosen (--conv-algo) */
    bool channels_last;        /* backend "cuda": images NHWC (backend.h's channels_last) */
    bool cuda_graphs;          /* backend "cuda", one rank: replay each step as a captured CUDA graph */
    int eval_every;            /* epochs between evaluations; 0: none at all */
    long max_steps;            /* 0: no limit */
    double lr, momentum, weight_decay;
    bool lr_scale_linear;      /* lr x world size, as the reference experiments (0.01 x world_size) */
    uint64_t seed;
    struct comm *comm;         /* the data-parallel job; NULL: this process alone */
    const struct exchange_method *exchange;   /* --comm: how gradients are averaged (NULL: BSP) */
    struct exchange_options exchange_options;
    const char *gpu_transport; /* --gpu-transport nccl|host (NULL: nccl for bsp-a2a, host for the rest) */
    bool progress;             /* an ETA line on stderr with each Step line (rank 0) */
    bool check_replicas;       /* after every step, check that all ranks hold the same parameters */
    const char *params_out;    /* write the final parameters to PREFIX.rankR (raw float32) */
    const char *checkpoint_dir;   /* save checkpoints here (NULL: none) */
    long checkpoint_every;     /* steps between checkpoints; 0: only when SIGTERM or SIGUSR1 arrives */
    bool resume;               /* continue from the newest valid checkpoint in checkpoint_dir */
    int seq_len;               /* --seq-len: tokens a sentence of a text dataset is cut or padded to (0: default) */
    const char *vocab;         /* --vocab: a BERT vocab.txt for WordPiece (NULL: a word vocabulary) */
    bool epochs_set;           /* --epochs was given: with --max-steps, whichever ends first; else --max-steps
                                  alone decides, over as many epochs as it takes */
    double dropout;            /* --dropout: the language models' (where dropout_set; else TRAIN_DEFAULT_DROPOUT) */
    bool dropout_set;
    double timeout_minutes;    /* no step finished for this long: a rank hung; abort the job (0: never) */
    double straggler_threshold;   /* name a rank computing this much above the median (0: never) */
    double stall_warning;      /* seconds without a finished step before a warning naming the stuck rank (0: none) */
    const char *status_dir;    /* where the workers' statuses go (NULL: $TMPDIR or /tmp) */
    struct stall_hook on_stall;   /* the watchdog's report, before it ends the job (watchdog.h) */
    double *loss_curve;        /* optional, max_steps long: step k's loss lands in loss_curve[k - 1] */
    const char *timeline;      /* --timeline PREFIX: each worker's Chrome trace in PREFIX.rankR.json */
    long timeline_steps;       /* steps recorded (0: all) */
    const char *profile_out;   /* --profile-out FILE: rank 0 writes the step's per-layer costs (profile.h) */
    const char *export_dir;    /* --export-run DIR: write the initial parameters and the data, then stop (export.h) */
    const char *emulate;       /* --emulate FILE: layers take this profile's times instead of computing */
    double emulate_rate;       /* --emulate-rate R: scaled so one device trains R samples/s (0: as profiled) */
    double dilate;             /* --dilate K: emulated waits K times longer, times reported / K (1) */
};

struct train_result {
    long steps;
    int epochs_done;
    double seconds;            /* training time, evaluation excluded */
    double started_at;         /* when its first step began, by the wall clock (seconds since the epoch,
                                  to the microsecond): after the start, the resume's load included */
    double peak_rate, final_rate;   /* samples/s of all ranks */
    double final_accuracy;     /* of the last evaluation; -1 if none ran */
    double final_loss;
    size_t params;
    double flops_per_sample;   /* of a training step: model_train_flops */
    int tokens_per_sample;     /* a text model's sequence length (padding counted, as PyTorch's speed
                                  runs count it); 0 for images */
    int resumed;               /* times this run has been resumed, this one included */
    long resumed_at;           /* the step this process began after (0: from the start): seconds and
                                  the rates are of the steps after it */
    int stop_signal;           /* SIGTERM or SIGUSR1 stopped it after a checkpoint; 0 otherwise */
    double *epoch_seconds;     /* epochs_done of each (free with train_result_free); epochs run
                                  before a resume have 0 seconds and no accuracy */
    double *epoch_accuracy;    /* -1 where the epoch was not evaluated */
    struct exchange_stats exchange;   /* what the gradient exchange did (nothing in a world of one) */
    double compute_ms;         /* this rank's mean forward + backward a step (straggler.h) */
    double straggler_seconds;  /* the straggler reports took, in all (rank 0's), and how many */
    long straggler_reports;
    char transport[16];        /* what moved the gradients: "nccl", "host" (staged from the device or, on
                                  CPU ranks asked to, from a second buffer), "" for MPI on CPU ranks */
};

void train_result_free(struct train_result *result);

/* Runs the training described by cfg, writing Step and Epoch lines to out. Returns 0, or -1 with
 * err (bad input, a loss that is not finite, out of memory). */
int train_run(const struct train_config *cfg, FILE *out, struct train_result *result, struct dt_err *err);

#endif
