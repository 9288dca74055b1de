/* local.c - local mode: fork the ranks, relay their output, forward signals, fail fast (local.h). */
#include "launcher/local.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "common/atomic_file.h"
#include "launcher/relay_signals.h"

extern char **environ;

/* A line longer than this is relayed in pieces, each with the prefix. */
#define LOCAL_LINE_MAX 65536

struct stream {
    int fd;            /* -1 once closed */
    int out_fd;        /* 1 or 2: where the lines go */
    char *buf;
    size_t len;
};

struct child {
    pid_t pid;
    int rank;
    bool running;
    struct stream streams[2];
};

struct supervisor {
    struct child *children;
    int num_children;
    int running;
    int open_streams;
    bool label;
    int first_failed_rank;    /* -1 until a rank fails */
    int exit_status;
    int forwarded_signal;     /* 0, or the last signal passed on to the ranks */
    bool stopping;            /* SIGTERM sent after a failure */
    bool killed;              /* SIGKILL sent */
    long long kill_at_ms;
};

static long long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

int local_free_port(void)
{
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0)
        return 0;
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
    socklen_t len = sizeof addr;
    int port = 0;
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) == 0 &&
        getsockname(fd, (struct sockaddr *)&addr, &len) == 0)
        port = ntohs(addr.sin_port);
    close(fd);
    return port;
}

/* In the forked child: become rank `rank` and exec. Never returns. */
static void become_rank(const struct node_bind *nb, const struct rank_exports *exports, int rank, int out_pipe,
                        int err_pipe, char *const *argv)
{
    setpgid(0, 0);   /* our own group: a terminal's ^C reaches dtrain only, which forwards it once */
    relay_signals_reset_in_child();
    if ((out_pipe >= 0 && dup2(out_pipe, STDOUT_FILENO) < 0) || (err_pipe >= 0 && dup2(err_pipe, STDERR_FILENO) < 0))
        _exit(126);
    struct dt_err err;
    if (nb->apply && plan_apply(&nb->topo, &nb->plan.ranks[rank], &err) < 0) {
        fprintf(stderr, "dtrain: rank %d: %s\n", rank, err.msg);
        _exit(2);
    }
    int status = launch_apply(exports, &err) < 0 ? 126 : launch_exec(argv, &err);
    fprintf(stderr, "dtrain: rank %d: %s\n", rank, err.msg);
    _exit(status);
}

static int fork_rank(struct supervisor *sup, const struct node_bind *nb, const struct rank_exports *exports, int rank,
                     char *const *argv, struct dt_err *err);

static int start_rank(struct supervisor *sup, const struct launch_request *req, const struct allocation *alloc,
                      const struct node_bind *nb, int rank, int port, char *const *argv, struct dt_err *err)
{
    struct rank_place place = {.rank = rank, .world_size = sup->num_children, .local_rank = rank,
                               .local_size = sup->num_children, .node_rank = 0, .num_nodes = 1};
    struct rank_exports exports;
    launch_exports(req, alloc, &place, port, environ, &exports);
    struct rank_bind bind = {&nb->topo, &nb->plan, &nb->plan.ranks[rank]};
    launch_export_binding(req, alloc, &bind, environ, &exports);
    int rc = launch_exports_check(&exports, err);
    if (rc == 0) {
        launch_report_kept(&exports, rank, req->verbose);
        if (req->report_bindings)
            launch_report_binding(alloc, &place, &bind);
        if (req->verbose)
            launch_print(stderr, alloc, &place, &exports, argv);
        rc = fork_rank(sup, nb, &exports, rank, argv, err);
    }
    launch_exports_free(&exports);
    return rc;
}

/* Forks rank `rank` with its exports and keeps its pipes; the parent's half of start_rank. */
static int fork_rank(struct supervisor *sup, const struct node_bind *nb, const struct rank_exports *exports, int rank,
                     char *const *argv, struct dt_err *err)
{
    struct child *child = &sup->children[rank];
    int pipes[2][2] = {{-1, -1}, {-1, -1}};
    for (int s = 0; s < 2 && sup->label; s++)
        if (pipe2(pipes[s], O_CLOEXEC) < 0)
            return dt_fail(err, "cannot create a pipe for rank %d: %s", rank, strerror(errno));
    pid_t pid = fork();
    if (pid < 0)
        return dt_fail(err, "cannot start rank %d: %s", rank, strerror(errno));
    if (pid == 0)
        become_rank(nb, exports, rank, pipes[0][1], pipes[1][1], argv);
    setpgid(pid, pid);   /* also here: whichever of parent and child runs first, the group exists */
    child->pid = pid;
    child->rank = rank;
    child->running = true;
    sup->running++;
    for (int s = 0; s < 2; s++) {
        child->streams[s] = (struct stream){.fd = pipes[s][0], .out_fd = s + 1};
        if (sup->label) {
            close(pipes[s][1]);
            child->streams[s].buf = malloc(LOCAL_LINE_MAX);
            if (!child->streams[s].buf)
                return dt_fail(err, "out of memory");
            sup->open_streams++;
        }
    }
    return 0;
}

static void signal_ranks(struct supervisor *sup, int sig)
{
    for (int i = 0; i < sup->num_children; i++)
        if (sup->children[i].running)
            kill(-sup->children[i].pid, sig);   /* the whole group: shells and their children too */
}

static void reap_children(struct supervisor *sup)
{
    int status;
    pid_t pid;
    while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
        struct child *child = NULL;
        for (int i = 0; i < sup->num_children; i++)
            if (sup->children[i].pid == pid)
                child = &sup->children[i];
        if (!child || !child->running)
            continue;
        child->running = false;
        sup->running--;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (code == 0 || sup->first_failed_rank >= 0)
            continue;
        sup->first_failed_rank = child->rank;
        sup->exit_status = code;
        if (WIFSIGNALED(status))
            fprintf(stderr, "dtrain: rank %d (pid %d) was killed by signal %d (%s)", child->rank, (int)pid,
                    WTERMSIG(status), strsignal(WTERMSIG(status)));
        else
            fprintf(stderr, "dtrain: rank %d (pid %d) exited with status %d", child->rank, (int)pid, code);
        if (sup->forwarded_signal) {
            fputs("\n", stderr);   /* the user asked them all to stop: let the rest finish cleanly */
            continue;
        }
        fprintf(stderr, "; stopping the other %d rank(s)\n", sup->running);
        signal_ranks(sup, SIGTERM);
        sup->stopping = true;
        sup->kill_at_ms = now_ms() + LOCAL_KILL_GRACE_MS;
    }
}

static void handle_signals(struct supervisor *sup)
{
    int sigs[64], n;
    while ((n = relay_signals_take(sigs, 64)) > 0) {
        for (int i = 0; i < n; i++) {
            if (sigs[i] == SIGCHLD)
                continue;
            sup->forwarded_signal = sigs[i];
            signal_ranks(sup, sigs[i]);
        }
    }
    reap_children(sup);   /* SIGCHLD or not: cheap, and a merged SIGCHLD is never missed */
}

/* Relays what a rank wrote, line by line, each line after "RANK: " (where our own output is gone,
 * the ranks keep running: nothing better to do with the text). */
static void relay_stream(struct supervisor *sup, struct child *child, struct stream *st)
{
    ssize_t n = read(st->fd, st->buf + st->len, LOCAL_LINE_MAX - st->len);
    if (n < 0 && (errno == EINTR || errno == EAGAIN))
        return;
    char prefix[16];
    int prefix_len = snprintf(prefix, sizeof prefix, "%d: ", child->rank);
    if (n > 0)
        st->len += (size_t)n;
    size_t start = 0;
    for (size_t i = 0; i < st->len; i++) {
        if (st->buf[i] != '\n')
            continue;
        (void)write_fully(st->out_fd, prefix, (size_t)prefix_len);
        (void)write_fully(st->out_fd, st->buf + start, i + 1 - start);
        start = i + 1;
    }
    memmove(st->buf, st->buf + start, st->len - start);
    st->len -= start;
    bool eof = n <= 0;
    if (st->len > 0 && (eof || st->len == LOCAL_LINE_MAX)) {   /* a last line without '\n', or a huge one */
        (void)write_fully(st->out_fd, prefix, (size_t)prefix_len);
        (void)write_fully(st->out_fd, st->buf, st->len);
        (void)write_fully(st->out_fd, "\n", 1);
        st->len = 0;
    }
    if (eof) {
        close(st->fd);
        st->fd = -1;
        sup->open_streams--;
    }
}

static void close_streams(struct supervisor *sup)
{
    for (int i = 0; i < sup->num_children; i++)
        for (int s = 0; s < 2; s++)
            if (sup->children[i].streams[s].fd >= 0)
                relay_stream(sup, &sup->children[i], &sup->children[i].streams[s]);   /* flushes and closes */
}

static void supervise_ranks(struct supervisor *sup)
{
    struct pollfd *fds = calloc((size_t)(1 + 2 * sup->num_children), sizeof *fds);
    struct stream **owners = calloc((size_t)(1 + 2 * sup->num_children), sizeof *owners);
    struct child **children = calloc((size_t)(1 + 2 * sup->num_children), sizeof *children);
    while (fds && owners && children && (sup->running > 0 || sup->open_streams > 0)) {
        int nfds = 0;
        fds[nfds++] = (struct pollfd){.fd = relay_signals_fd(), .events = POLLIN};
        for (int i = 0; i < sup->num_children; i++)
            for (int s = 0; s < 2; s++)
                if (sup->children[i].streams[s].fd >= 0) {
                    owners[nfds] = &sup->children[i].streams[s];
                    children[nfds] = &sup->children[i];
                    fds[nfds] = (struct pollfd){.fd = owners[nfds]->fd, .events = POLLIN};
                    nfds++;
                }
        int timeout = -1;
        if (sup->stopping && !sup->killed)
            timeout = (int)(sup->kill_at_ms > now_ms() ? sup->kill_at_ms - now_ms() : 0);
        if (sup->running == 0)
            timeout = 100;   /* ranks are gone; only something they left behind holds a pipe */
        int ready = poll(fds, (nfds_t)nfds, timeout);
        if (ready < 0 && errno != EINTR)
            break;
        if (ready == 0 && sup->running == 0)
            break;
        if (ready > 0 && (fds[0].revents & POLLIN))
            handle_signals(sup);
        for (int i = 1; i < nfds && ready > 0; i++)
            if (fds[i].revents & (POLLIN | POLLHUP | POLLERR))
                relay_stream(sup, children[i], owners[i]);
        if (sup->stopping && !sup->killed && now_ms() >= sup->kill_at_ms) {
            signal_ranks(sup, SIGKILL);
            sup->killed = true;
        }
    }
    close_streams(sup);
    while (sup->running > 0) {   /* only if poll itself failed: wait for the ranks the plain way */
        signal_ranks(sup, SIGKILL);
        reap_children(sup);
        if (sup->running > 0)
            usleep(10000);
    }
    free(fds);
    free(owners);
    free(children);
}

int local_run(const struct launch_request *req, const struct allocation *alloc, const struct node_bind *nb,
              char *const *argv, struct dt_err *err)
{
    int ranks = launch_local_ranks(req);
    if (ranks > LOCAL_MAX_RANKS)
        return dt_fail(err, "%d ranks asked for; local mode starts at most %d", ranks, LOCAL_MAX_RANKS);
    struct supervisor sup = {.num_children = ranks, .label = req->label, .first_failed_rank = -1};
    sup.children = calloc((size_t)ranks, sizeof *sup.children);
    if (!sup.children)
        return dt_fail(err, "out of memory");
    for (int i = 0; i < ranks; i++)
        sup.children[i].streams[0].fd = sup.children[i].streams[1].fd = -1;
    if (relay_signals_install(err) < 0) {
        free(sup.children);
        return -1;
    }
    int port = local_free_port();
    int rc = 0;
    for (int rank = 0; rank < ranks && rc == 0; rank++)
        rc = start_rank(&sup, req, alloc, nb, rank, port, argv, err);
    if (rc < 0) {
        fprintf(stderr, "dtrain: %s; stopping the ranks already started\n", err->msg);
        signal_ranks(&sup, SIGKILL);
        sup.first_failed_rank = 0;
        sup.exit_status = 1;
    }
    supervise_ranks(&sup);
    for (int i = 0; i < ranks; i++)
        for (int s = 0; s < 2; s++)
            free(sup.children[i].streams[s].buf);
    free(sup.children);
    return sup.exit_status;   /* ranks killed by a forwarded signal count as failed: 128 + signal */
}
