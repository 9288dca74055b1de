/* export.h - a run's starting point written out for a peer framework: the initial parameters in
 * dtrain's order and the encoded data, so PyTorch can train the same model from the same weights on
 * the same tokens (bench/seq_accuracy.py) and the two accuracies can be held against each other. */
#ifndef EXPORT_H
#define EXPORT_H

#include "common/dt_error.h"
#include "trainer/loop/run.h"
#include "trainer/loop/train.h"

/* Writes DIR/params.f32 (float32, dtrain's parameter order), DIR/train.ids and DIR/test.ids (int32,
 * count x length token ids; 0 is padding), DIR/train.labels and DIR/test.labels (uint8) and
 * DIR/meta.json (the model's name and sizes, the run's options), each whole or not at all. A text
 * dataset on the CPU only. Returns 0, or -1 with err. */
int export_run(const struct run *r, const struct train_config *cfg, const char *dir, struct dt_err *err);

#endif
