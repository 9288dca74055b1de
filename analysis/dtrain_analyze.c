/* dtrain_analyze.c - `dtrain-analyze`: turns result documents into findings and tables. Each
 * subcommand lives in a file of its own (command.h); this file lists them and dispatches. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "analysis/command.h"
#include "common/version.h"
#include "common/stdout_check.h"

/* In the overview's order. */
static const struct analyze_command *const commands[] = {&table_command,    &throughput_command, &plot_command,
                                                         &predict_command,  &timeline_command,   &audit_command,
                                                         &nodes_command,    &compare_command};
static const int command_count = sizeof commands / sizeof commands[0];

static void print_overview(void)
{
    puts("Usage: dtrain-analyze COMMAND [options] FILE...\n"
         "Turns result documents into findings and tables. Commands (COMMAND --help for one):");
    for (int i = 0; i < command_count; i++)
        printf("  %-11s %s\n", commands[i]->name, commands[i]->summary);
    puts("Options: -h, --help (this text and every command's), -V, --version.\n"
         "Options may come before or after the files; -- ends them.\n"
         "Exit status: 0 ok (audit: nothing found); 1 audit findings; 2 bad usage, an unreadable\n"
         "file or line (after what could be done with the rest), or nothing to table.\n");
}

static void print_all_help(void)
{
    print_overview();
    for (int i = 0; i < command_count; i++)
        fputs(commands[i]->help, stdout), fputc('\n', stdout);
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-analyze");   /* a full disk is an error, not an empty table */
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'}, {"version", no_argument, NULL, 'V'}, {NULL, 0, NULL, 0}};
    int opt;
    while ((opt = getopt_long(argc, argv, "+hV", options, NULL)) != -1) {
        switch (opt) {
        case 'h': print_all_help(); return 0;
        case 'V': printf("dtrain-analyze %s\n", DTRAIN_VERSION); return 0;
        default: fputs("Try 'dtrain-analyze --help'.\n", stderr); return 2;
        }
    }
    if (optind >= argc) {
        fputs("dtrain-analyze: no command given (try --help)\n", stderr);
        return 2;
    }
    for (int i = 0; i < command_count; i++)
        if (strcmp(argv[optind], commands[i]->name) == 0)
            return commands[i]->run(argc - optind, argv + optind);
    fprintf(stderr, "dtrain-analyze: unknown command \"%s\" (this version has:", argv[optind]);
    for (int i = 0; i < command_count; i++)
        fprintf(stderr, "%s %s", i ? "," : "", commands[i]->name);
    fputs(")\n", stderr);
    return 2;
}
