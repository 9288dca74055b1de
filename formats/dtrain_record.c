/* dtrain_record.c - dtrain-record: the run record of a program dtrain-train did not train. A
 * sweep of a user's own script ends in the same averaged table as dtrain-train's runs when the
 * job template times the step and writes its record here (sbatch/dtrain.sbatch does). */
#include <getopt.h>
#include <libgen.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "common/dt_parse.h"
#include "common/hostlist.h"
#include "formats/log_lines.h"
#include "formats/record.h"
#include "common/version.h"
#include "common/stdout_check.h"

static const char usage_text[] =
    "Usage: dtrain-record --record FILE --program TEXT --runtime SECONDS [options]\n"
    "  Appends the run record (formats/FORMAT.md) of a program dtrain-train did not train: a user's\n"
    "  own script run under dtrain, timed by the job that ran it. `dtrain-analyze table` then\n"
    "  averages its runs into the speedup table as it does dtrain-train's. sbatch/dtrain.sbatch\n"
    "  calls it after a program given as `-- PROGRAM ARGS` or DTRAIN_PROGRAM.\n"
    "      --record FILE        the records file to append to (a study's records.jsonl)\n"
    "      --program TEXT       what ran: its name is the record's model (\"train.py\")\n"
    "      --runtime SECONDS    the step's wall time\n"
    "      --status N           the step's exit status (0: completed; else failed, and why:\n"
    "                           2 a usage error, 128+N killed by signal N, ...)\n"
    "      --why TEXT           what happened, instead of what the status says\n"
    "      --replaced TEXT      where the template's spares took over in the job, why, and when\n"
    "                           the step started again (\"gn02 by gn04 (a stalled rank: ...); ...\")\n"
    "  -N, --nodes N            nodes of the step (1)\n"
    "  -g, --gpus-per-node N    GPUs per node (0: CPU ranks)\n"
    "  -n, --ranks N            ranks in all (nodes x GPUs per node, or nodes)\n"
    "      --nodelist HOSTLIST  the step's nodes (gn[01-02]); each rank's node as Slurm's default\n"
    "                          block distribution places it (-N 2 -n 4: ranks 0-1 on gn01)\n"
    "      --job-id ID          the Slurm job (SLURM_JOB_ID when set)\n"
    "      --log FILE           the program's log: its Step lines (Step200: 100.71 data/sec,\n"
    "                           samples of all ranks a second) give the rate and steps\n"
    "      --tag TEXT           the run's label (a link speed: 1gbit)\n"
    "      --explain-status N   print what an exit status says happened, write nothing\n"
    "  -h, --help               this text\n"
    "      --version            dtrain's version\n"
    "  e.g. dtrain-record --record runs/records.jsonl --program 'python3 train.py' \\\n"
    "           --runtime 81.4 --status 0 -N 2 -g 4 --nodelist 'gn[01-02]' --log slurm-1234.out\n";

struct program_run {
    const char *record, *program, *why, *nodelist, *job_id, *log, *tag, *replaced;
    double runtime;
    int status, nodes, gpus, ranks;
};

/* What an exit status says happened. */
static void describe_status(int status, char *out, size_t size)
{
    if (status == 2)
        snprintf(out, size, "exit status 2: a usage error (dtrain or the program refused its arguments; the job's "
                 "output says which)");
    else if (status == 3)
        snprintf(out, size, "exit status 3: a stalled rank ended the step (dtrain --watch, or dtrain-train's --timeout; "
                 "the job's output names the rank and its host)");
    else if (status == 124)
        snprintf(out, size, "exit status 124: a timeout ended it");
    else if (status > 128 && status < 160)
        snprintf(out, size, "killed by signal %d (%s): a rank killed (out of memory?), lost, or the time limit",
                 status - 128, status - 128 == 9 ? "KILL" : status - 128 == 15 ? "TERM" : status - 128 == 6 ? "ABRT"
                                               : status - 128 == 11 ? "SEGV" : "see kill -l");
    else
        snprintf(out, size, "exit status %d", status);
}

/* The last Step line's rate and step of the log (0, 0 when it has none). */
static int read_log(const char *path, double *rate, long *steps, double *peak)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return fprintf(stderr, "dtrain-record: --log %s: cannot open\n", path), -1;
    char line[4096];
    while (fgets(line, sizeof line, f)) {
        struct log_lines_line parsed;
        if (log_lines_parse(line, &parsed) == SEEDLOG_STEP) {
            *rate = parsed.data_per_sec, *steps = parsed.step;
            *peak = parsed.data_per_sec > *peak ? parsed.data_per_sec : *peak;
        }
    }
    fclose(f);
    return 0;
}

/* Whether a command's word is an interpreter (or its option) that runs the program named after it. */
static bool is_interpreter(const char *word)
{
    static const char *const names[] = {"sh", "bash", "dash", "env", "perl", "julia", "torchrun", "python"};
    const char *name = strrchr(word, '/') ? strrchr(word, '/') + 1 : word;
    if (word[0] == '-')
        return true;   /* python3 -u train.py */
    if (strncmp(name, "python", 6) == 0 && strspn(name + 6, "0123456789.") == strlen(name + 6))
        return true;   /* python, python3, python3.11 */
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(name, names[i]) == 0)
            return true;
    return false;
}

/* The model field: the program's name, without its directory or interpreter ("python3 x/train.py" -> "train.py"). */
static void program_name(const char *program, char *out, size_t size)
{
    char copy[512];
    snprintf(copy, sizeof copy, "%s", program);
    char *word = strtok(copy, " \t"), *name = word;
    while (word && is_interpreter(word))
        name = word = strtok(NULL, " \t");
    snprintf(out, size, "%s", name ? basename(name) : "program");
}

static int write_record(const struct program_run *p)
{
    struct run_record rec = {.nodes = p->nodes, .gpus_per_node = p->gpus, .world_size = p->ranks,
                             .runtime_seconds = p->runtime};
    struct hostlist hosts;
    if (record_hosts_from_nodelist(&rec, p->nodelist, p->ranks, true, &hosts) < 0)
        return free(rec.hostnames), hostlist_free(&hosts), fputs("dtrain-record: out of memory\n", stderr), 1;
    rec.nodelist = (char *)(p->nodelist ? p->nodelist : "");
    program_name(p->program, rec.model, sizeof rec.model);
    snprintf(rec.dataset, sizeof rec.dataset, "its own");
    snprintf(rec.comm, sizeof rec.comm, "its own");
    snprintf(rec.backend, sizeof rec.backend, "program");
    snprintf(rec.job_id, sizeof rec.job_id, "%s", p->job_id ? p->job_id : "");
    rec.tag = (char *)(p->tag ? p->tag : "");
    rec.replaced = (char *)(p->replaced ? p->replaced : "");
    snprintf(rec.version, sizeof rec.version, "%s", DTRAIN_VERSION);
    if (p->log && read_log(p->log, &rec.final_data_per_sec, &rec.steps_per_rank, &rec.peak_data_per_sec) < 0)
        return free(rec.hostnames), hostlist_free(&hosts), 2;
    snprintf(rec.exit_state, sizeof rec.exit_state, "%s", p->status == 0 ? "completed" : "failed");
    char error[512] = "";   /* the record points at it */
    if (p->status != 0 && p->why)
        snprintf(error, sizeof error, "%s", p->why);
    else if (p->status != 0)
        describe_status(p->status, error, sizeof error);
    rec.error = error;
    long now = (long)time(NULL);
    record_time(now - (long)p->runtime, rec.start_time);
    record_time(now, rec.end_time);
    struct dt_err err;
    int rc = record_append(p->record, &rec, &err) < 0 ? (fprintf(stderr, "dtrain-record: %s\n", err.msg), 1) : 0;
    free(rec.hostnames);
    hostlist_free(&hosts);
    return rc;
}

enum { O_RECORD = 256, O_PROGRAM, O_RUNTIME, O_STATUS, O_WHY, O_NODELIST, O_JOB_ID, O_LOG, O_TAG, O_EXPLAIN,
       O_REPLACED };

/* A number option, or a message naming it. Returns 0, or 2. */
static int parse_number_option(const char *name, const char *text, int min, int max, int *out)
{
    if (dt_parse_int(text, min, max, out) < 0)
        return fprintf(stderr, "dtrain-record: --%s \"%s\" is not a number from %d to %d\n", name, text, min, max), 2;
    return 0;
}

static int parse_options(int argc, char **argv, struct program_run *p)
{
    static const struct option options[] = {
        {"record", required_argument, NULL, O_RECORD},   {"program", required_argument, NULL, O_PROGRAM},
        {"runtime", required_argument, NULL, O_RUNTIME}, {"status", required_argument, NULL, O_STATUS},
        {"why", required_argument, NULL, O_WHY},         {"nodes", required_argument, NULL, 'N'},
        {"gpus-per-node", required_argument, NULL, 'g'}, {"ranks", required_argument, NULL, 'n'},
        {"nodelist", required_argument, NULL, O_NODELIST}, {"job-id", required_argument, NULL, O_JOB_ID},
        {"log", required_argument, NULL, O_LOG},         {"tag", required_argument, NULL, O_TAG},
        {"explain-status", required_argument, NULL, O_EXPLAIN}, {"replaced", required_argument, NULL, O_REPLACED},
        {"help", no_argument, NULL, 'h'},                {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0}};
    int c, rc = 0;
    char *end;
    while (rc == 0 && (c = getopt_long(argc, argv, "N:g:n:h", options, NULL)) != -1) {
        switch (c) {
        case O_RECORD: p->record = optarg; break;
        case O_PROGRAM: p->program = optarg; break;
        case O_RUNTIME:
            p->runtime = strtod(optarg, &end);
            if (end == optarg || *end || !(p->runtime >= 0 && p->runtime < 1e9))
                rc = (fprintf(stderr, "dtrain-record: --runtime \"%s\" is not a number of seconds\n", optarg), 2);
            break;
        case O_STATUS: rc = parse_number_option("status", optarg, 0, 255, &p->status); break;
        case O_WHY: p->why = optarg; break;
        case 'N': rc = parse_number_option("nodes", optarg, 1, 1 << 20, &p->nodes); break;
        case 'g': rc = parse_number_option("gpus-per-node", optarg, 0, 1 << 10, &p->gpus); break;
        case 'n': rc = parse_number_option("ranks", optarg, 1, 1 << 24, &p->ranks); break;
        case O_NODELIST: p->nodelist = optarg; break;
        case O_JOB_ID: p->job_id = optarg; break;
        case O_LOG: p->log = optarg; break;
        case O_TAG: p->tag = optarg; break;
        case O_REPLACED: p->replaced = optarg; break;
        case O_EXPLAIN: {
            int status;
            char why[300];
            if ((rc = parse_number_option("explain-status", optarg, 0, 255, &status)) == 0)
                describe_status(status, why, sizeof why), puts(why);
            return rc ? rc : -1;
        }
        case 'h': fputs(usage_text, stdout); return -1;
        case 'V': printf("dtrain-record %s\n", DTRAIN_VERSION); return -1;
        default: return fputs("Try 'dtrain-record --help'.\n", stderr), 2;
        }
    }
    if (rc == 0 && (!p->record || !p->program || p->runtime < 0))
        rc = (fputs("dtrain-record: --record FILE, --program TEXT and --runtime SECONDS are needed (try --help)\n",
                    stderr), 2);
    if (rc == 0 && optind < argc)
        rc = (fprintf(stderr, "dtrain-record: \"%s\": no such option (try --help)\n", argv[optind]), 2);
    return rc;
}

int main(int argc, char **argv)
{
    stdout_check_at_exit("dtrain-record");   /* a full disk is an error, not an empty table */
    struct program_run p = {.runtime = -1, .nodes = 1, .job_id = getenv("SLURM_JOB_ID")};
    int rc = parse_options(argc, argv, &p);
    if (rc != 0)
        return rc < 0 ? 0 : rc;
    if (p.ranks == 0)
        p.ranks = p.nodes * (p.gpus > 0 ? p.gpus : 1);
    if ((long)p.gpus + (p.nodes - 1) > p.ranks)
        return fprintf(stderr, "dtrain-record: %d GPUs per node on %d nodes is more than the %d ranks\n", p.gpus,
                       p.nodes, p.ranks), 2;
    return write_record(&p);
}
