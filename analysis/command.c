/* command.c - what several of dtrain-analyze's subcommands share: --baseline, --where, and the
 * options of a command that has only --help (command.h). */
#include "analysis/command.h"

#include <getopt.h>
#include <stdio.h>

int command_parse_baseline(const char *text, struct speedup_options *opt)
{
    char extra;
    if (sscanf(text, "%dx%d%c", &opt->base_nodes, &opt->base_gpus, &extra) != 2 || opt->base_nodes < 1 ||
        opt->base_gpus < 1)
        return fprintf(stderr, "dtrain-analyze: --baseline \"%s\": expected NxG, e.g. 1x1\n", text), 2;
    return 0;
}

void command_keep_where(const char *command, struct record_set *set, const struct experiment_where *where, int count)
{
    int kept = 0;
    for (int i = 0; i < set->count; i++) {
        if (experiment_matches(&set->runs[i], where, count))
            set->runs[kept++] = set->runs[i];
        else
            record_free(&set->runs[i]);
    }
    if (kept < set->count)
        fprintf(stderr, "%s: %d of %d runs meet --where\n", command, kept, set->count);
    set->count = kept;
}

int command_add_where(const char *text, struct experiment_where *where, int *count)
{
    struct dt_err err;
    if (*count == MAX_WHERE)
        return fprintf(stderr, "dtrain-analyze: at most %d --where conditions\n", MAX_WHERE), 2;
    if (experiment_where_parse(text, &where[*count], &err) < 0)
        return fprintf(stderr, "dtrain-analyze: %s\n", err.msg), 2;
    ++*count;
    return 0;
}

int command_help_only(int argc, char **argv, const char *command, const char *help)
{
    static const struct option options[] = {{"help", no_argument, NULL, 'h'}, {NULL, 0, NULL, 0}};
    int c;
    optind = 0;   /* 0, not 1: getopt starts afresh, so options may follow the files (GNU permutes) */
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        if (c == 'h')
            return fputs(help, stdout), -1;
        return fprintf(stderr, "Try 'dtrain-analyze %s --help'.\n", command), 2;
    }
    if (optind >= argc)
        return fprintf(stderr, "dtrain-analyze: %s needs at least one FILE\n", command), 2;
    return 0;
}

