/* dtrain_hostlist.c - `dtrain-hostlist`: expand, fold, count and index Slurm hostlists from the shell. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "common/dt_parse.h"
#include "common/hostlist.h"
#include "common/version.h"
#include "common/stdout_check.h"

static const char usage_text[] =
    "Usage: dtrain-hostlist [options] COMMAND [ARG] EXPR...\n"
    "\n"
    "Reads Slurm hostlist expressions the way Slurm does and prints what they hold.\n"
    "Several EXPRs (or '-' for names read from standard input, blank-separated) are\n"
    "joined as if separated by commas.\n"
    "\n"
    "Commands:\n"
    "  expand EXPR...     every name, in order, duplicates kept (like\n"
    "                     `scontrol show hostnames`)\n"
    "  compress EXPR...   Slurm's folded form (like `scontrol show hostlist`)\n"
    "  count EXPR...      how many names\n"
    "  nth N EXPR...      the name at 0-based index N (the SLURM_NODEID convention)\n"
    "\n"
    "Options:\n"
    "  -s, --separator SEP  put SEP between expanded names (default: a newline)\n"
    "  -h, --help           this text\n"
    "  -V, --version        the version\n"
    "\n"
    "Examples:\n"
    "  dtrain-hostlist expand 'gn[01-02,07-08]'          gn01 gn02 gn07 gn08, one a line\n"
    "  dtrain-hostlist expand -s, 'rack[1-2]-gn[01-02]'  rack1-gn01,rack1-gn02,rack2-gn01,...\n"
    "  dtrain-hostlist compress gn01 gn02 gn03 gn05      gn[01-03,05]\n"
    "  dtrain-hostlist count \"$SLURM_JOB_NODELIST\"\n"
    "  MASTER=$(dtrain-hostlist nth 0 \"$SLURM_STEP_NODELIST\")\n"
    "\n"
    "Zero padding follows the low bound's width, as in Slurm: gn[009-011] gives gn009..gn011,\n"
    "gn[1-10] gives gn1..gn10. A range may hold at most 65536 names and a list 262144.\n"
    "Exit status: 0 on success, 2 on a malformed expression or bad usage (the message names\n"
    "the expression and the character position).\n";

/* Reads blank-separated names from stdin into the list. */
static int read_stdin_names(struct hostlist *list, struct dt_err *err)
{
    char word[HOSTLIST_MAX_NAME + 2];
    while (scanf("%256s", word) == 1) {
        if (strlen(word) > HOSTLIST_MAX_NAME)
            return dt_fail(err, "standard input: a name is longer than %d characters", HOSTLIST_MAX_NAME);
        if (hostlist_expand(word, list, err) < 0)
            return dt_wrap(err, "standard input");
    }
    return 0;
}

static int collect_hostlists(int argc, char **argv, struct hostlist *list, struct dt_err *err)
{
    if (argc == 0)
        return dt_fail(err, "no hostlist expression given (try --help)");
    for (int i = 0; i < argc; i++) {
        int rc = strcmp(argv[i], "-") == 0 ? read_stdin_names(list, err) : hostlist_expand(argv[i], list, err);
        if (rc < 0)
            return -1;
    }
    return 0;
}

static int run_command(const char *command, int argc, char **argv, const char *separator, struct dt_err *err)
{
    long nth = -1;
    if (strcmp(command, "nth") == 0) {
        if (argc < 1 || dt_parse_long(argv[0], 0, HOSTLIST_MAX_NAMES, &nth) < 0)
            return dt_fail(err, "nth needs an index N >= 0 before the expression (got \"%s\")",
                           argc ? argv[0] : "");
        argc--, argv++;
    } else if (strcmp(command, "expand") && strcmp(command, "compress") && strcmp(command, "count")) {
        return dt_fail(err, "unknown command \"%s\" (expand, compress, count or nth; try --help)", command);
    }
    struct hostlist list;
    hostlist_init(&list);
    int rc = collect_hostlists(argc, argv, &list, err);
    if (rc == 0) {
        if (strcmp(command, "expand") == 0) {
            for (size_t i = 0; i < list.count; i++)
                printf("%s%s", i ? separator : "", hostlist_nth(&list, i));
            putchar('\n');
        } else if (strcmp(command, "count") == 0) {
            printf("%zu\n", list.count);
        } else if (strcmp(command, "nth") == 0) {
            if ((size_t)nth >= list.count)
                rc = dt_fail(err, "index %ld is past the end: the list has %zu names (0..%zu)", nth,
                             list.count, list.count - 1);
            else
                printf("%s\n", hostlist_nth(&list, (size_t)nth));
        } else {
            char *folded = hostlist_compress(&list);
            rc = folded ? (printf("%s\n", folded), 0) : dt_fail(err, "out of memory");
            free(folded);
        }
    }
    hostlist_free(&list);
    return rc;
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-hostlist");   /* a full disk is an error, not an empty table */
    static const struct option options[] = {
        {"separator", required_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    const char *separator = "\n";
    int opt;
    while ((opt = getopt_long(argc, argv, "s:hV", options, NULL)) != -1) {
        switch (opt) {
        case 's': separator = optarg; break;
        case 'h': fputs(usage_text, stdout); return 0;
        case 'V': printf("dtrain-hostlist %s\n", DTRAIN_VERSION); return 0;
        default: fputs("Try 'dtrain-hostlist --help'.\n", stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs("dtrain-hostlist: no command given\n", stderr);
        fputs(usage_text, stderr);
        return 2;
    }
    struct dt_err err;
    if (run_command(argv[optind], argc - optind - 1, argv + optind + 1, separator, &err) < 0) {
        fprintf(stderr, "dtrain-hostlist: %s\n", err.msg);
        return 2;
    }
    return fflush(stdout) == 0 ? 0 : 1;
}
