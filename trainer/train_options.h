/* train_options.h - dtrain-train's command line: --help, and the options as the loop's
 * train_config and the run record's settings, every combination checked before MPI starts. */
#ifndef TRAIN_OPTIONS_H
#define TRAIN_OPTIONS_H

#include "trainer/run_record.h"
#include "trainer/loop/train.h"

struct train_options {
    struct train_config cfg;
    struct record_settings record;
};

/* Fills opts from argv. Returns 0; 2 after a message for a bad option or combination; -1 when a
 * text was printed instead (--help, --version, --list-methods) and the tool exits 0. */
int train_options_parse(int argc, char **argv, struct train_options *opts);

#endif
