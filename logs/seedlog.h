/* seedlog.h - the trainer's log lines, in the format of the seeds' logs (logs/FORMAT.md):
 *   Step200: 100.71 data/sec
 *   Epoch 0 in 543.88 sec, test time 13.77 sec, test accuracy: 0.86263
 * Written here and nowhere else, so the analyzer's parser (beside it) reads exactly what the
 * trainer writes. */
#ifndef SEEDLOG_H
#define SEEDLOG_H

#include <stdio.h>

/* samples_per_sec: samples of all ranks per second since training started. */
void seedlog_step(FILE *out, long step, double samples_per_sec);

void seedlog_epoch(FILE *out, int epoch, double train_sec, double test_sec, double test_accuracy);

#endif
