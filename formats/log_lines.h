/* log_lines.h - the trainer's log lines, in the format of the reference trainer logs (formats/FORMAT.md):
 *   Step200: 100.71 data/sec
 *   Epoch 0 in 543.88 sec, test time 13.77 sec, test accuracy: 0.86263
 * Written here and nowhere else, so the analyzer's parser (beside it) reads exactly what the
 * trainer writes. */
#ifndef LOG_LINES_H
#define LOG_LINES_H

#include <stdio.h>

/* samples_per_sec: samples of all ranks per second since training started. */
void log_lines_step(FILE *out, long step, double samples_per_sec);

void log_lines_epoch(FILE *out, int epoch, double train_sec, double test_sec, double test_accuracy);

/* Reading them back, in every spelling the reference experiments have: "Step200: 100.71 data/sec" and
 * "Step 1600 60.44 data/sec"; "test accuracy: 0.88", "test accuracy:0.9", ". Test accuracy 0.97";
 * after a Markdown bullet ("- ") or an srun --label prefix ("3: "). */
enum log_lines_kind { SEEDLOG_OTHER, SEEDLOG_STEP, SEEDLOG_EPOCH };

struct log_lines_line {
    enum log_lines_kind kind;
    long step;                 /* SEEDLOG_STEP */
    double data_per_sec;
    int epoch;                 /* SEEDLOG_EPOCH */
    double train_sec, test_sec, accuracy;   /* accuracy is NAN when the line has none */
};

enum log_lines_kind log_lines_parse(const char *line, struct log_lines_line *out);

#endif
