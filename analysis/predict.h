/* predict.h - dtrain-analyze predict: the seeds' method table predicted from a profile and the
 * links (costmodel.h), before the allocation is spent. */
#ifndef PREDICT_H
#define PREDICT_H

/* The command's main: argv[0] is "predict". Exit status: 0, or 2 for bad input. */
int predict_command(int argc, char **argv);

#endif
