/* seedlog.c - write the seed-format log lines (see seedlog.h). */
#include "seedlog.h"

void seedlog_step(FILE *out, long step, double samples_per_sec)
{
    fprintf(out, "Step%ld: %.2f data/sec\n", step, samples_per_sec);
    fflush(out);
}

void seedlog_epoch(FILE *out, int epoch, double train_sec, double test_sec, double test_accuracy)
{
    fprintf(out, "Epoch %d in %.2f sec, test time %.2f sec, test accuracy: %.5f\n", epoch, train_sec, test_sec,
            test_accuracy);
    fflush(out);
}
