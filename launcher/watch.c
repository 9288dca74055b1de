/* watch.c - dtrain --watch: the rank's program as a watched child (watch.h). */
#include "launcher/watch.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "launcher/gpu_busy.h"
#include "launcher/launch.h"
#include "launcher/proc_progress.h"
#include "launcher/relay_signals.h"
#include "launcher/stall.h"
#include "launcher/watch_channel.h"

/* How often the program is sampled and reported: the stall's time is known to about this. The
 * leader alone is read at each (one small file); the node's whole process table, when the leader
 * has not moved, at most every WATCH_SCAN_S. */
#define WATCH_PERIOD_S 0.25
#define WATCH_SCAN_S 1.0
/* CPU time is progress from 5% of a core over the last second on: a process asleep in a read, or
 * in a collective under gloo, still gains a clock tick every second or two from its library's
 * threads waking (measured: PyTorch 1.13 over gloo, 3 ranks, ~0.5 ticks a second each). */
#define WATCH_BUSY_SHARE 0.05
#define WATCH_WINDOW 5            /* samples a second apart: the last second's, at 4 a second */
/* After the stalled step is ended: SIGTERM, then SIGKILL this much later. */
#define WATCH_KILL_GRACE_S 2.0

struct watcher {
    const struct watch_setup *setup;
    pid_t pid;                /* the program, leader of its own process group */
    bool running;
    int wait_status;
    int pipes[2];             /* its stdout and stderr, read here; -1 once closed */
    double last_progress;     /* when its CPU time last grew or it last wrote (this node's clock) */
    unsigned long long leader_ticks[WATCH_WINDOW];   /* the leader's CPU time at the last samples */
    int samples;              /* taken so far (the window's index: samples % WATCH_WINDOW) */
    unsigned long long group_ticks;   /* the whole group's CPU time at its last look */
    double last_scan;         /* when the whole group was last looked at */
    unsigned long long busy_ticks;    /* WATCH_BUSY_SHARE of a second, in clock ticks */
    struct gpu_busy gpu;      /* the rank's GPU through NVML, where there is one to read */
    struct proc_sample sample;
    struct watch_channel channel;
    struct watched_rank *ranks;   /* rank 0: every rank's latest report */
    double started;
    bool warned_silent;       /* rank 0 said which watchers never reported */
    bool stalled;             /* rank 0 ended the step */
    double kill_at;
};

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static int start_program(struct watcher *w, char *const *argv, struct dt_err *err)
{
    int out[2], errp[2];
    if (pipe2(out, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0)
        return dt_fail(err, "cannot make the pipes for the watched program: %s", strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        return dt_fail(err, "cannot start %s: %s", argv[0], strerror(errno));
    if (pid == 0) {
        setpgid(0, 0);   /* its own group: sampled and signalled whole, shells' children too */
        relay_signals_reset_in_child();
        if (dup2(out[1], STDOUT_FILENO) < 0 || dup2(errp[1], STDERR_FILENO) < 0)
            _exit(126);
        int code = launch_exec(argv, err);   /* 127 not found, 126 not runnable, as without --watch */
        fprintf(stderr, "dtrain: %s\n", err->msg);
        _exit(code);
    }
    setpgid(pid, pid);
    close(out[1]);
    close(errp[1]);
    w->pid = pid;
    w->running = true;
    w->pipes[0] = out[0];
    w->pipes[1] = errp[0];
    return 0;
}

/* Passes what the program wrote on, byte for byte; writing is progress. */
static void relay_output(struct watcher *w, int which)
{
    char buf[65536];
    ssize_t n = read(w->pipes[which], buf, sizeof buf);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    if (n <= 0) {
        close(w->pipes[which]);
        w->pipes[which] = -1;
        return;
    }
    (void)write_fully(which + 1, buf, (size_t)n);   /* our own output gone: the program keeps running */
    w->last_progress = now_s();
}

static void signal_program(struct watcher *w, int sig)
{
    if (!w->running)
        return;
    kill(-w->pid, sig);
    if (sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
        kill(-w->pid, SIGCONT);   /* a stopped program acts on it only once it runs */
}

static void handle_signals(struct watcher *w)
{
    int sigs[64], n;
    while ((n = relay_signals_take(sigs, 64)) > 0)
        for (int i = 0; i < n; i++)
            if (sigs[i] != SIGCHLD)
                signal_program(w, sigs[i]);
    int status;
    if (w->running && waitpid(w->pid, &status, WNOHANG) == w->pid) {
        w->running = false;
        w->wait_status = status;
    }
}

static void on_report(const struct watch_report *r, void *arg)
{
    struct watcher *w = arg;
    if (r->rank <= 0 || r->rank >= w->setup->world_size)
        return;
    struct watched_rank *wr = &w->ranks[r->rank];
    if (r->done) {
        wr->finished = true;
        return;
    }
    wr->reported = true;
    wr->lost = false;
    wr->last_progress_s = now_s() - (double)r->age_ms / 1000.0;
    snprintf(wr->host, sizeof wr->host, "%s", r->host);
    snprintf(wr->state, sizeof wr->state, "%s", r->state);
}

static void on_lost(int rank, void *arg)
{
    struct watcher *w = arg;
    if (rank > 0 && rank < w->setup->world_size && !w->ranks[rank].finished)
        w->ranks[rank].lost = true;
}

struct stall_json {
    const struct watched_rank *rank;
    double stalled_for;
};

/* A JSON string's content: quotes and backslashes escaped, control characters as '?'. */
static void put_json_text(FILE *out, const char *text)
{
    for (const char *c = text; *c; c++) {
        if (*c == '"' || *c == '\\')
            fputc('\\', out);
        fputc((unsigned char)*c < 0x20 ? '?' : *c, out);
    }
}

static int fill_stall_json(FILE *out, const void *arg)
{
    const struct stall_json *j = arg;
    fprintf(out, "{\"rank\":%d,\"stalled_s\":%.1f,\"host\":\"", j->rank->rank, j->stalled_for);
    put_json_text(out, j->rank->host);
    fputs("\",\"state\":\"", out);
    put_json_text(out, stall_state_of(j->rank));
    return fputs("\"}\n", out) < 0 ? -1 : 0;
}

/* Rank 0: judge every rank; on a stall say who, keep it for the job script and end the step. */
static void judge_ranks(struct watcher *w, double now)
{
    const struct watch_setup *s = w->setup;
    if (!w->warned_silent && now - w->started >= s->stall_s) {
        for (int r = 1; r < s->world_size; r++)
            if (!w->ranks[r].reported && !w->ranks[r].lost && !w->ranks[r].finished)
                fprintf(stderr, "dtrain: watch: rank %d's watcher has not reported in %.0f s (port %d on %s closed to "
                        "it?): it is not watched\n", r, s->stall_s, s->port, s->rank0_host);
        w->warned_silent = true;
    }
    struct stall_verdict v;
    stall_decide(w->ranks, s->world_size, now, s->stall_s, &v);
    if (v.num_named == 0)
        return;
    char text[2048];
    stall_describe(w->ranks, s->world_size, now, &v, text, sizeof text);
    fprintf(stderr, "dtrain: watch: %s; ending the step (exit %d)\n", text, WATCH_EXIT_STALLED);
    struct dt_err err;
    struct stall_json j = {&w->ranks[v.named[0]], v.stalled_for_s};
    if (s->report_path && atomic_write(s->report_path, fill_stall_json, &j, &err) < 0)
        fprintf(stderr, "dtrain: watch: %s\n", err.msg);
    w->stalled = true;
    w->kill_at = now + WATCH_KILL_GRACE_S;
    signal_program(w, SIGTERM);
}

/* Once a period: sample the program, report (or, on rank 0, judge). */
static void sample_and_report(struct watcher *w, double now)
{
    if (!w->running)
        return;
    /* the leader alone first (one file), its CPU time over the last second; the whole group
     * (every process of the node looked at) only when the leader is idle: a shell waiting for
     * its child, a stall */
    proc_sample_leader("/proc", w->pid, &w->sample);
    unsigned long long a_second_ago = w->leader_ticks[(w->samples + 1) % WATCH_WINDOW];
    w->leader_ticks[w->samples % WATCH_WINDOW] = w->sample.cpu_ticks;
    bool window_full = ++w->samples >= WATCH_WINDOW;
    int gpu_percent = gpu_busy_percent(&w->gpu);   /* -1: not read */
    if ((window_full && w->sample.cpu_ticks - a_second_ago >= w->busy_ticks) ||
        gpu_percent >= (int)(WATCH_BUSY_SHARE * 100)) {
        w->last_progress = now;   /* computing, or waiting on a GPU that computes */
    } else if (now - w->last_scan >= WATCH_SCAN_S) {
        double since = now - w->last_scan;
        w->last_scan = now;
        unsigned long long before = w->group_ticks;
        proc_sample_group("/proc", w->pid, &w->sample);
        w->group_ticks = w->sample.cpu_ticks;
        if (before > 0 && (double)(w->group_ticks - before) >= (double)w->busy_ticks * since)
            w->last_progress = now;
    }
    char state[96];
    proc_describe(&w->sample, state, sizeof state);
    if (gpu_percent >= 0) {
        size_t used = strlen(state);
        snprintf(state + used, sizeof state - used, ", its GPU %d%% busy", gpu_percent);
    }
    if (w->setup->rank != 0) {
        char line[WATCH_LINE_MAX];
        snprintf(line, sizeof line, "progress %d %ld %s %s\n", w->setup->rank, (long)((now - w->last_progress) * 1000),
                 w->setup->host, state);
        channel_send(&w->channel, line);
        return;
    }
    struct watched_rank *me = &w->ranks[0];
    me->last_progress_s = w->last_progress;
    snprintf(me->state, sizeof me->state, "%s", state);
    if (!w->stalled)
        judge_ranks(w, now);
}

/* Until the program has ended and its output is drained: relay, forward, sample, report. */
static void watch_loop(struct watcher *w)
{
    double next_tick = now_s() + WATCH_PERIOD_S;
    struct pollfd fds[3 + WATCH_MAX_PEERS + 1];
    while (w->running || w->pipes[0] >= 0 || w->pipes[1] >= 0) {
        int nfds = 0;
        fds[nfds++] = (struct pollfd){.fd = relay_signals_fd(), .events = POLLIN};
        for (int i = 0; i < 2; i++)
            fds[nfds++] = (struct pollfd){.fd = w->pipes[i], .events = POLLIN};   /* -1: ignored */
        int channel_fds = channel_poll_fds(&w->channel, fds + nfds, WATCH_MAX_PEERS + 1);
        nfds += channel_fds;
        double now = now_s();
        int timeout = now >= next_tick ? 0 : (int)((next_tick - now) * 1000) + 1;
        if (!w->running)
            timeout = 100;   /* the program is gone; only something it left behind holds a pipe */
        int ready = poll(fds, (nfds_t)nfds, timeout);
        if (ready < 0 && errno != EINTR)
            break;
        if (ready == 0 && !w->running)
            break;
        handle_signals(w);   /* SIGCHLD or not: cheap, and a merged SIGCHLD is never missed */
        for (int i = 0; i < 2 && ready > 0; i++)
            if (w->pipes[i] >= 0 && (fds[1 + i].revents & (POLLIN | POLLHUP | POLLERR)))
                relay_output(w, i);
        now = now_s();
        if (channel_fds > 0 && (ready > 0 || now >= next_tick))
            channel_receive(&w->channel, on_report, on_lost, w);
        if (now >= next_tick) {
            sample_and_report(w, now);
            next_tick = now + WATCH_PERIOD_S;
        }
        if (w->stalled && w->running && now >= w->kill_at) {
            kill(-w->pid, SIGKILL);
            w->kill_at = now + 3600;
        }
    }
    while (w->running) {   /* only if poll itself failed */
        if (waitpid(w->pid, &w->wait_status, 0) == w->pid || errno == ECHILD)
            w->running = false;
    }
}

/* The watcher's own CPU time (not its program's): what watching cost this rank. */
static void say_cost(const struct watcher *w)
{
    struct rusage self;
    if (getrusage(RUSAGE_SELF, &self) < 0)
        return;
    double cpu = (double)(self.ru_utime.tv_sec + self.ru_stime.tv_sec) +
                 (double)(self.ru_utime.tv_usec + self.ru_stime.tv_usec) * 1e-6;
    double wall = now_s() - w->started;
    fprintf(stderr, "dtrain: watch: rank %d: watching used %.1f ms of CPU in %.1f s", w->setup->rank, cpu * 1e3, wall);
    if (wall >= 1)   /* over a shorter run the start (the node's topology read) is all there is */
        fprintf(stderr, " (%.3f%% of a core)", 100 * cpu / wall);
    fputc('\n', stderr);
}

static int setup_channel(struct watcher *w)
{
    const struct watch_setup *s = w->setup;
    if (s->rank != 0) {
        channel_open_to(&w->channel, s->rank0_host, s->port);
        return 0;
    }
    w->ranks = calloc((size_t)s->world_size, sizeof *w->ranks);
    if (!w->ranks)
        return -1;
    for (int r = 0; r < s->world_size; r++)
        w->ranks[r].rank = r;
    w->ranks[0].reported = true;
    snprintf(w->ranks[0].host, sizeof w->ranks[0].host, "%s", s->host);
    struct dt_err err;
    if (s->world_size > 1 && channel_listen(&w->channel, s->port, &err) < 0) {
        fprintf(stderr, "dtrain: watch: %s; only rank 0 is watched\n", err.msg);
        w->channel = (struct watch_channel){.is_rank0 = true, .listen_fd = -1, .fd = -1};
    }
    return 0;
}

int watch_run(char *const *argv, const struct watch_setup *setup, int *raise_signal, struct dt_err *err)
{
    struct watcher w = {.setup = setup, .pipes = {-1, -1}, .channel = {.listen_fd = -1, .fd = -1}};
    *raise_signal = 0;
    if (relay_signals_install(err) < 0)
        return -1;
    if (setup_channel(&w) < 0)
        return dt_fail(err, "out of memory for %d ranks' reports", setup->world_size);
    if (start_program(&w, argv, err) < 0) {
        channel_close(&w.channel);
        free(w.ranks);
        return -1;
    }
    char why[128];
    if (gpu_busy_open(&w.gpu, getenv("DTRAIN_GPU_BUSID"), why, sizeof why) == 0 && setup->verbose)
        fprintf(stderr, "dtrain: watch: rank %d: its GPU's utilization read through NVML\n", setup->rank);
    else if (setup->verbose && getenv("DTRAIN_GPU_BUSID"))
        fprintf(stderr, "dtrain: watch: rank %d: its GPU's utilization not read: %s\n", setup->rank, why);
    w.started = w.last_progress = now_s();
    long clock_ticks = sysconf(_SC_CLK_TCK);
    w.busy_ticks = (unsigned long long)(WATCH_BUSY_SHARE * (double)(clock_ticks > 0 ? clock_ticks : 100) + 0.5);
    if (w.busy_ticks < 1)
        w.busy_ticks = 1;
    watch_loop(&w);
    if (setup->verbose)
        say_cost(&w);
    int status = WIFEXITED(w.wait_status) ? WEXITSTATUS(w.wait_status) : 128 + WTERMSIG(w.wait_status);
    if (WIFSIGNALED(w.wait_status) && !w.stalled)
        *raise_signal = WTERMSIG(w.wait_status);
    if (w.stalled)
        status = WATCH_EXIT_STALLED;
    if (setup->rank != 0) {
        char line[64];
        snprintf(line, sizeof line, "done %d %d\n", setup->rank, status);
        channel_send(&w.channel, line);
    }
    channel_close(&w.channel);
    gpu_busy_close(&w.gpu);
    free(w.ranks);
    return status;
}

void watch_exit_like(int status, int raise_signal)
{
    if (raise_signal > 0) {
        struct rlimit none = {0, 0};
        setrlimit(RLIMIT_CORE, &none);   /* the program dumped its own core, if any */
        signal(raise_signal, SIG_DFL);
        sigset_t just;
        sigemptyset(&just);
        sigaddset(&just, raise_signal);
        sigprocmask(SIG_UNBLOCK, &just, NULL);
        raise(raise_signal);
    }
    exit(status);
}
