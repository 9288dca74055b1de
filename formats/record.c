/* record.c - run records written, checked and freed (see record.h and FORMAT.md); record_read.c
 * reads them. */
#include "formats/record.h"

#include "common/atomic_file.h"
#include "common/hostlist.h"
#include "common/lock_file.h"
#include "formats/json_read.h"

#include <errno.h>
#include <fcntl.h>
#include <jansson.h>
#include <float.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

int record_hosts_from_nodelist(struct run_record *rec, const char *nodelist, int world, bool block,
                               struct hostlist *hosts)
{
    struct dt_err ignored;
    hostlist_init(hosts);
    bool read = nodelist && nodelist[0] && hostlist_expand(nodelist, hosts, &ignored) == 0 && hosts->count > 0;
    /* one rank a node is block distribution too, one rank each */
    bool placed = read && (hosts->count == (size_t)world || (block && hosts->count < (size_t)world));
    if (!(rec->hostnames = calloc((size_t)world, sizeof *rec->hostnames)))
        return -1;
    /* Slurm's block distribution: the first world % nodes nodes run one rank more than the rest */
    int nodes = placed ? (int)hosts->count : 1, base = world / nodes, extra = world % nodes, node = 0, on_node = 0;
    for (int r = 0; r < world; r++) {
        rec->hostnames[r] = placed ? (char *)hostlist_nth(hosts, (size_t)node) : (char *)"";
        if (placed && ++on_node == base + (node < extra))
            node++, on_node = 0;
    }
    return 0;
}

void record_time(long seconds, char out[32])
{
    time_t t = (time_t)seconds;
    struct tm tm;
    gmtime_r(&t, &tm);
    strftime(out, 32, "%Y-%m-%dT%H:%M:%SZ", &tm);
}

/* A record's text as JSON, whatever bytes it holds: a text field is never a reason to lose the
 * record. Valid UTF-8 is kept, each byte that is not becomes U+FFFD. */
static json_t *json_text(const char *s)
{
    size_t len = s ? strlen(s) : 0, used = 0;
    char *clean = malloc(3 * len + 1);
    if (!clean)
        return NULL;
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p;) {
        size_t n = *p < 0x80 ? 1 : (size_t)json_utf8_length(p);   /* the reader's own check */
        if (n)
            memcpy(clean + used, p, n), used += n, p += n;
        else
            memcpy(clean + used, "\xEF\xBF\xBD", 3), used += 3, p++;
    }
    json_t *out = json_stringn_nocheck(clean, used);
    free(clean);
    return out;
}

static json_t *to_json(const struct run_record *r)
{
    json_t *hosts = json_array(), *epochs = json_array();
    for (int i = 0; i < r->world_size && r->hostnames; i++)
        json_array_append_new(hosts, json_text(r->hostnames[i]));
    for (int e = 0; e < r->epochs_done; e++)
        json_array_append_new(epochs, json_pack("{s:i, s:f, s:o}", "epoch", e, "seconds", r->epoch_seconds[e],
                                                "test_accuracy", r->epoch_accuracy[e] < 0 ? json_null()
                                                                                          : json_real(r->epoch_accuracy[e])));
    json_t *o = json_pack("{s:i, s:o, s:o, s:o, s:o, s:o, s:i, s:i, s:i, s:o}", "record_version", RECORD_VERSION,
                          "dtrain_version", json_text(r->version), "job_id", json_text(r->job_id), "job_name",
                          json_text(r->job_name), "step_id", json_text(r->step_id), "nodelist", json_text(r->nodelist), "nodes",
                          r->nodes, "gpus_per_node", r->gpus_per_node, "world_size", r->world_size, "hostnames", hosts);
    json_object_update_new(o, json_pack("{s:o, s:o, s:o, s:f, s:i, s:i, s:I, s:o, s:o, s:i}", "model", json_text(r->model),
                                        "dataset", json_text(r->dataset), "optimizer", json_text(r->optimizer), "lr", r->lr,
                                        "batch_per_replica", r->batch_per_replica, "epochs", r->epochs,
                                        "steps_per_rank", (json_int_t)r->steps_per_rank, "comm", json_text(r->comm),
                                        "backend", json_text(r->backend), "threads", r->threads));
    json_object_update_new(o, json_pack("{s:f, s:f, s:f, s:o, s:o, s:o, s:o, s:o, s:i}", "runtime_seconds",
                                        r->runtime_seconds, "peak_data_per_sec", r->peak_data_per_sec,
                                        "final_data_per_sec", r->final_data_per_sec, "epochs_run", epochs,
                                        "start_time", json_text(r->start_time), "end_time", json_text(r->end_time), "exit_state",
                                        json_text(r->exit_state), "error", json_text(r->error), "resumed", r->resumed));
    json_object_set_new(o, "tag", json_text(r->tag));
    json_object_set_new(o, "comm_options", json_text(r->comm_options));
    json_object_set_new(o, "emulation", json_text(r->emulation));
    if (r->replaced && r->replaced[0])   /* only where spares took over: other records stay as they were */
        json_object_set_new(o, "replaced", json_text(r->replaced));
    json_object_set_new(o, "max_steps", json_integer((json_int_t)r->max_steps));
    json_object_set_new(o, "resumed_at_step", json_integer((json_int_t)r->resumed_at_step));
    json_object_set_new(o, "tokens_per_sec", json_real(r->tokens_per_sec));
    if (r->rank_compute_ms) {   /* whole microseconds: a list of short integers, not 17-digit reals */
        json_t *compute = json_array();
        for (int i = 0; i < r->world_size; i++)
            json_array_append_new(compute, json_integer((json_int_t)(r->rank_compute_ms[i] * 1000 + 0.5)));
        json_object_set_new(o, "rank_compute_us", compute);
    }
    return o;
}

/* Appends one line so that it lands whole or not at all. Writers take the file's lock, so the
 * length seen before the write is still the file's end: a short write (a full disk, a file size
 * limit) is cut back to it. A file whose last line is torn (a writer killed mid-write, or a
 * filesystem that could not truncate) gets a newline first, so this line stays readable. */
static int append_whole(int fd, const char *path, const char *line, size_t len, struct dt_err *err)
{
    struct stat st;
    if (fstat(fd, &st) < 0)
        return dt_fail(err, "cannot read the record file %s: %s", path, strerror(errno));
    char last = '\n';
    if (st.st_size > 0 && pread(fd, &last, 1, st.st_size - 1) != 1)
        return dt_fail(err, "cannot read the record file %s: %s", path, strerror(errno));
    int rc = 0;
    if (last != '\n' && write(fd, "\n", 1) != 1)
        rc = dt_fail(err, "cannot write the record file %s: %s", path, strerror(errno));
    /* after a short write the rest is written again, which says why (ENOSPC, EFBIG, EIO: not a guess) */
    if (rc == 0 && write_fully(fd, line, len) < 0)
        rc = dt_fail(err, "cannot write the record file %s: %s; the file is as it was", path, strerror(errno));
    if (rc == 0 && fsync(fd) < 0)
        rc = dt_fail(err, "cannot flush the record file %s: %s", path, strerror(errno));
    if (rc < 0 && ftruncate(fd, st.st_size) < 0)
        dt_wrap(err, "%s: could not be cut back to its last whole line (%s)", path, strerror(errno));
    return rc;
}

/* Does the open file hold a failed record of this job step? (read under the lock) */
static bool has_failure_of(int fd, const struct run_record *rec)
{
    FILE *f = fdopen(dup(fd), "r");
    if (!f)
        return false;
    rewind(f);
    char *line = NULL, key[80];
    size_t size = 0;
    bool found = false;
    snprintf(key, sizeof key, "\"job_id\":\"%s\"", rec->job_id);
    while (!found && getline(&line, &size, f) > 0) {
        struct run_record other;
        struct dt_err ignored;
        if (!strstr(line, key) || !strstr(line, "\"failed\"") || record_parse(line, &other, &ignored) < 0)
            continue;
        found = strcmp(other.job_id, rec->job_id) == 0 && strcmp(other.step_id, rec->step_id) == 0 &&
                strcmp(other.exit_state, "failed") == 0;
        record_free(&other);
    }
    free(line);
    fclose(f);
    return found;
}

/* How long an append waits for another of the user's processes to finish its own (appends take
 * milliseconds: a minute means a holder that is stuck, and the caller is told). */
#define RECORD_LOCK_WAIT_SECONDS 60.0

/* The records file's lock: a file of its own beside it, PATH.lock, the user's and 0600
 * (lock_file.h), so that a user who can only read the records cannot hold up the appends. Where
 * none is there and none can be made (a directory the user may not write), the records file itself.
 * Sets *lock to the lock file's fd (or -1). 0, or -1 with err. */
static int lock_records(const char *path, int fd, int *lock, struct dt_err *err)
{
    char lock_path[4096], what[4200];
    snprintf(what, sizeof what, "the record file %s", path);
    if (snprintf(lock_path, sizeof lock_path, "%s.lock", path) >= (int)sizeof lock_path)
        return dt_fail(err, "record file %s: the path is too long for its lock file", path);
    int got = lock_file_take(lock_path, RECORD_LOCK_WAIT_SECONDS, what, err);
    *lock = got >= 0 ? got : -1;
    if (got >= 0 || got == LOCK_UNSUPPORTED)
        return 0;
    struct stat st;   /* a lock file that is there but not ours was planted: refused, never fallen back from */
    if (got == LOCK_FAILED && (errno == EACCES || errno == EROFS) && lstat(lock_path, &st) < 0 && errno == ENOENT) {
        if (lock_fd_within(fd, RECORD_LOCK_WAIT_SECONDS) == 0)
            return 0;
        return dt_fail(err, "cannot lock the record file %s: %s", path,
                       errno == EWOULDBLOCK ? "another process held it for a minute" : strerror(errno));
    }
    return -1;
}

/* Encodes the record and appends it under the file's lock; with only_first_failure, not when a
 * failed record of the same job step is there already. */
static int append_locked(const char *path, const struct run_record *rec, bool only_first_failure, bool *written,
                         struct dt_err *err)
{
    *written = false;
    json_t *o = to_json(rec);
    char *text = o ? json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER) : NULL;
    json_decref(o);
    if (!text)
        return dt_fail(err, "%s: cannot encode the run record", path);
    size_t len = strlen(text);
    if (len + 1 > RECORD_MAX_LINE) {
        free(text);
        return dt_fail(err, "%s: the run record is longer than %d bytes", path, RECORD_MAX_LINE);
    }
    text[len] = '\n';   /* json_dumps leaves room: it wrote len + 1 bytes with the NUL */
    /* Not through a link, and only a regular file of this user's: in a shared directory another
     * user could plant one that points at a file of theirs, or of root's. */
    int fd = open_output(path, O_RDWR | O_APPEND, "the record file", err), lock = -1;
    int rc = fd < 0 ? -1 : lock_records(path, fd, &lock, err);
    if (rc == 0 && !(only_first_failure && rec->job_id[0] && has_failure_of(fd, rec))) {
        rc = append_whole(fd, path, text, len + 1, err);
        *written = rc == 0;
    }
    if (fd >= 0)
        close(fd);
    if (lock >= 0)
        close(lock);   /* releases the lock */
    free(text);
    return rc;
}

int record_append(const char *path, const struct run_record *rec, struct dt_err *err)
{
    bool written;
    return append_locked(path, rec, false, &written, err);
}

int record_append_failure(const char *path, const struct run_record *rec, bool *written, struct dt_err *err)
{
    return append_locked(path, rec, true, written, err);
}

/* A number a run could have produced: finite, not negative, not beyond `most`. */
static bool is_sensible(double value, double most)
{
    return isfinite(value) && value >= 0 && value <= most;
}

int record_check_sense(const struct run_record *r, struct dt_err *err)
{
    if (!is_sensible(r->runtime_seconds, 1e9))   /* 31 years */
        return dt_fail(err, "field \"runtime_seconds\" is %g: not a run's duration", r->runtime_seconds);
    if (!is_sensible(r->peak_data_per_sec, 1e12) || !is_sensible(r->final_data_per_sec, 1e12))
        return dt_fail(err, "fields \"peak_data_per_sec\" and \"final_data_per_sec\" (%g, %g) are not rates",
                       r->peak_data_per_sec, r->final_data_per_sec);
    if (!is_sensible(r->tokens_per_sec, 1e15))
        return dt_fail(err, "field \"tokens_per_sec\" (%g) is not a rate", r->tokens_per_sec);
    if (!is_sensible(r->lr, DBL_MAX))
        return dt_fail(err, "field \"lr\" is %g: not a learning rate", r->lr);
    /* (an uneven run's gpus_per_node is its first node's: 3 of 3 + 2; each node runs at least one rank) */
    if (r->gpus_per_node < 0 || (long)r->gpus_per_node + (r->nodes > 1 ? r->nodes - 1 : 0) > r->world_size)
        return dt_fail(err, "gpus_per_node %d on %d nodes is more GPUs than the %d ranks", r->gpus_per_node, r->nodes,
                       r->world_size);
    if (r->steps_per_rank < 0 || r->max_steps < 0 || r->threads < 0 || r->epochs < 0 || r->batch_per_replica < 0 || r->resumed < 0)
        return dt_fail(err, "a negative count among steps_per_rank, max_steps, threads, epochs, batch_per_replica, resumed");
    if (r->resumed_at_step < 0 || r->resumed_at_step > r->steps_per_rank)
        return dt_fail(err, "resumed_at_step %ld is not a step of the run's %ld", r->resumed_at_step, r->steps_per_rank);
    for (int e = 0; e < r->epochs_done; e++)
        if (!is_sensible(r->epoch_seconds[e], 1e9))
            return dt_fail(err, "field \"epochs_run\": epoch %d took %g s", e, r->epoch_seconds[e]);
    return 0;
}

void record_upgrade(struct run_record *r, long version)
{
    static const char *const renamed[][2] = {{"allreduce", "bsp-a2a"}, {"wfbp", "wfbp-a2a"}};
    for (size_t i = 0; version == 1 && i < sizeof renamed / sizeof renamed[0]; i++)
        if (strcmp(r->comm, renamed[i][0]) == 0)
            snprintf(r->comm, sizeof r->comm, "%s", renamed[i][1]);
}

int record_keep_hostnames(struct run_record *r, const char *const *names, int count)
{
    size_t bytes = 0;
    for (int i = 0; i < count; i++)
        bytes += strlen(names[i]) + 1;
    char **block = malloc((size_t)count * sizeof(char *) + bytes + 1);
    if (!block)
        return -1;
    char *next = (char *)(block + count);
    for (int i = 0; i < count; i++) {
        size_t length = strlen(names[i]) + 1;
        block[i] = memcpy(next, names[i], length);
        next += length;
    }
    free(r->hostnames);
    r->hostnames = block;
    return 0;
}

char record_no_text[1];

char *record_own_text(const char *text)
{
    return text[0] ? strdup(text) : record_no_text;
}

/* Frees one of a parsed record's texts (record_no_text is shared) and clears it. */
static void free_text(char **text)
{
    if (*text != record_no_text)
        free(*text);
    *text = NULL;
}

void record_free(struct run_record *r)
{
    free_text(&r->nodelist), free_text(&r->job_name), free_text(&r->comm_options), free_text(&r->error);
    free_text(&r->tag), free_text(&r->emulation), free_text(&r->replaced);
    free(r->hostnames);
    free(r->epoch_seconds);   /* epoch_accuracy is in its block */
    free(r->rank_compute_read);
    r->hostnames = NULL;
    r->epoch_seconds = r->epoch_accuracy = NULL;
    r->rank_compute_read = NULL;
}
