/* log_lines.c - write and read the trainer's log lines (see log_lines.h). */
#include "formats/log_lines.h"

#include <ctype.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

void log_lines_step(FILE *out, long step, double samples_per_sec)
{
    fprintf(out, "Step%ld: %.2f data/sec\n", step, samples_per_sec);
    fflush(out);
}

void log_lines_epoch(FILE *out, int epoch, double train_sec, double test_sec, double test_accuracy)
{
    fprintf(out, "Epoch %d in %.2f sec, test time %.2f sec, test accuracy: %.5f\n", epoch, train_sec, test_sec,
            test_accuracy);
    fflush(out);
}

/* Past blanks, a Markdown bullet and an srun --label "N: " prefix. */
static const char *skip_prefix(const char *s)
{
    s += strspn(s, " \t");
    if ((s[0] == '-' || s[0] == '*') && s[1] == ' ')
        s += 2 + strspn(s + 2, " \t");
    size_t digits = strspn(s, "0123456789");
    if (digits > 0 && s[digits] == ':' && s[digits + 1] == ' ')
        s += digits + 2;
    return s;
}

static enum log_lines_kind parse_step(const char *s, struct log_lines_line *out)
{
    char *end;
    s += 4 + strspn(s + 4, " ");
    if (!isdigit((unsigned char)*s))
        return SEEDLOG_OTHER;
    out->step = strtol(s, &end, 10);
    s = end + (*end == ':');
    double rate = strtod(s, &end);
    if (end == s || strncmp(end + strspn(end, " "), "data/sec", 8) != 0 || !(rate >= 0) || isinf(rate))
        return SEEDLOG_OTHER;
    out->data_per_sec = rate;
    return out->kind = SEEDLOG_STEP;
}

static enum log_lines_kind parse_epoch(const char *s, struct log_lines_line *out)
{
    int used = 0;
    if (sscanf(s, "Epoch %d in %lf sec, test time %lf sec%n", &out->epoch, &out->train_sec, &out->test_sec, &used) < 3 ||
        used == 0)
        return SEEDLOG_OTHER;
    out->accuracy = NAN;
    /* "accuracy" also finds the reference experiments' "est accuracy" typo */
    for (const char *a = s + used; (a = strchr(a, 'a')) != NULL; a++) {
        if (strncasecmp(a, "accuracy", 8) != 0)
            continue;
        a += 8;
        a += strspn(a, ": ");
        char *end;
        double value = strtod(a, &end);
        if (end != a && value >= 0 && value <= 1)
            out->accuracy = value;
        break;
    }
    return out->kind = SEEDLOG_EPOCH;
}

enum log_lines_kind log_lines_parse(const char *line, struct log_lines_line *out)
{
    memset(out, 0, sizeof *out);
    const char *s = skip_prefix(line);
    if (strncmp(s, "Step", 4) == 0)
        return parse_step(s, out);
    if (strncmp(s, "Epoch ", 6) == 0)
        return parse_epoch(s, out);
    return SEEDLOG_OTHER;
}
