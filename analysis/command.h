/* command.h - dtrain-analyze's subcommands: each a {name, summary, help, run} in a file of its own
 * (cmd_*.c, predict.c), listed by dtrain_analyze.c; and the option helpers several share. */
#ifndef COMMAND_H
#define COMMAND_H

#include "analysis/experiment.h"
#include "analysis/inputs.h"
#include "analysis/speedup.h"

struct analyze_command {
    const char *name;          /* dtrain-analyze NAME ... */
    const char *summary;       /* one line for the overview: what goes in -> what comes out */
    const char *help;          /* NAME --help */
    /* argv[0] is the command's name. Returns the exit status: 0 ok (audit: nothing found), 1 audit
     * findings, 2 bad usage or input. */
    int (*run)(int argc, char **argv);
};

extern const struct analyze_command table_command, throughput_command, plot_command, predict_command,
    timeline_command, audit_command, nodes_command, compare_command;

/* --where conditions a command takes at most. */
enum { MAX_WHERE = 16 };

/* Options with no short form: -b, -s and -w mean other things in dtrain's other tools (batch size,
 * separator, sweep's Slurm-like node list). */
enum { O_BASELINE = 256, O_STAT, O_SERIES, O_WHERE };

/* --baseline NxG into opt. 0, or 2 after a message. */
int command_parse_baseline(const char *text, struct speedup_options *opt);

/* One --where condition more (table and plot take them alike). 0, or 2 after a message. */
int command_add_where(const char *text, struct experiment_where *where, int *count);

/* Keeps the runs of set that meet every condition, saying how many when some were left out. */
void command_keep_where(const char *command, struct record_set *set, const struct experiment_where *where,
                        int count);

/* The options of a command that has only --help: 0 with optind at the first file, -1 when the help
 * was printed, 2 for anything else. */
int command_help_only(int argc, char **argv, const char *command, const char *help);

#endif
