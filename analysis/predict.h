/* predict.h - dtrain-analyze predict: the seeds' method table predicted from a profile and the
 * links (costmodel.h), before the allocation is spent. */
#ifndef PREDICT_H
#define PREDICT_H

/* The command's main: argv[0] is "predict". Exit status: 0, or 2 for bad input. */
int predict_command(int argc, char **argv);

/* "10gbit", "100Gbit", "400mbit", "12GB/s", "900MB/s" as bytes per second; -1 if not one. */
double predict_parse_bandwidth(const char *text);

/* "25us", "1.5ms", "0.00001s" (or a bare number of seconds) as seconds; -1 if not one. */
double predict_parse_latency(const char *text);

#endif
