/* watch_channel.c - the watchers' reports to rank 0 over TCP (watch_channel.h). */
#include "launcher/watch_channel.h"

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int channel_listen(struct watch_channel *c, int port, struct dt_err *err)
{
    *c = (struct watch_channel){.is_rank0 = true, .listen_fd = -1, .fd = -1, .port = port};
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0), one = 1;
    if (fd < 0)
        return dt_fail(err, "cannot make the watch channel's socket: %s", strerror(errno));
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    struct sockaddr_in addr = {.sin_family = AF_INET, .sin_port = htons((uint16_t)port),
                               .sin_addr.s_addr = htonl(INADDR_ANY)};
    if (bind(fd, (struct sockaddr *)&addr, sizeof addr) < 0 || listen(fd, 128) < 0) {
        int saved = errno;
        close(fd);
        return dt_fail(err, "cannot listen on port %d for the other ranks' watchers: %s", port, strerror(saved));
    }
    c->listen_fd = fd;
    return 0;
}

void channel_open_to(struct watch_channel *c, const char *rank0_host, int port)
{
    *c = (struct watch_channel){.listen_fd = -1, .fd = -1, .port = port};
    snprintf(c->rank0_host, sizeof c->rank0_host, "%s", rank0_host);
}

static void start_connect(struct watch_channel *c)
{
    char port[16];
    snprintf(port, sizeof port, "%d", c->port);
    struct addrinfo hints = {.ai_family = AF_INET, .ai_socktype = SOCK_STREAM}, *found = NULL;
    if (getaddrinfo(c->rank0_host, port, &hints, &found) != 0 || !found)
        return;   /* not resolvable now: tried again next second */
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
    if (fd >= 0 && (connect(fd, found->ai_addr, found->ai_addrlen) == 0 || errno == EINPROGRESS)) {
        c->fd = fd;
        c->connecting = true;
    } else if (fd >= 0) {
        close(fd);
    }
    freeaddrinfo(found);
}

/* Whether the connect under way has finished, well or not (then the socket is dropped). */
static void finish_connect(struct watch_channel *c)
{
    struct pollfd p = {.fd = c->fd, .events = POLLOUT};
    if (poll(&p, 1, 0) <= 0)
        return;
    int error = 0;
    socklen_t len = sizeof error;
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &error, &len) < 0 || error != 0) {
        close(c->fd);
        c->fd = -1;
    }
    c->connecting = false;
}

void channel_send(struct watch_channel *c, const char *line)
{
    if (c->fd < 0)
        start_connect(c);
    if (c->fd >= 0 && c->connecting)
        finish_connect(c);
    if (c->fd < 0 || c->connecting)
        return;
    size_t len = strlen(line);
    ssize_t n = send(c->fd, line, len, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
        return;   /* rank 0 is slow to read: this second's line is dropped */
    if (n != (ssize_t)len) {   /* rank 0's watcher is gone (or a part went): start again */
        close(c->fd);
        c->fd = -1;
    }
}

int channel_poll_fds(const struct watch_channel *c, struct pollfd *fds, int max)
{
    int n = 0;
    if (c->listen_fd >= 0 && n < max)
        fds[n++] = (struct pollfd){.fd = c->listen_fd, .events = POLLIN};
    for (int i = 0; i < c->num_peers && n < max; i++)
        if (c->peers[i].fd >= 0)
            fds[n++] = (struct pollfd){.fd = c->peers[i].fd, .events = POLLIN};
    return n;
}

int channel_parse(const char *line, struct watch_report *r)
{
    *r = (struct watch_report){0};
    int used = 0;
    if (sscanf(line, "done %d %d%n", &r->rank, &r->status, &used) == 2 && line[used] == '\0') {
        r->done = true;
        return r->rank >= 0 ? 0 : -1;
    }
    if (sscanf(line, "progress %d %ld %63s %n", &r->rank, &r->age_ms, r->host, &used) != 3 || used == 0)
        return -1;
    snprintf(r->state, sizeof r->state, "%s", line + used);
    return r->rank >= 0 && r->age_ms >= 0 ? 0 : -1;
}

static void accept_peers(struct watch_channel *c)
{
    int fd;
    while ((fd = accept4(c->listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK)) >= 0) {
        if (c->num_peers >= WATCH_MAX_PEERS) {
            close(fd);
            continue;
        }
        struct watch_peer *grown = realloc(c->peers, (size_t)(c->num_peers + 1) * sizeof *grown);
        if (!grown) {
            close(fd);
            return;
        }
        c->peers = grown;
        c->peers[c->num_peers++] = (struct watch_peer){.fd = fd, .rank = -1};
    }
}

/* Reads what a peer sent; whole lines to on_report; a closed connection to on_lost. */
static void read_peer(struct watch_peer *p, void (*on_report)(const struct watch_report *, void *),
                      void (*on_lost)(int rank, void *), void *arg)
{
    ssize_t n = recv(p->fd, p->buf + p->len, sizeof p->buf - 1 - (size_t)p->len, 0);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    if (n <= 0) {
        close(p->fd);
        p->fd = -1;
        on_lost(p->rank, arg);
        return;
    }
    p->len += (int)n;
    p->buf[p->len] = '\0';
    char *start = p->buf, *nl;
    while ((nl = strchr(start, '\n')) != NULL) {
        *nl = '\0';
        struct watch_report r;
        if (channel_parse(start, &r) == 0) {
            p->rank = r.rank;
            on_report(&r, arg);
        }
        start = nl + 1;
    }
    p->len -= (int)(start - p->buf);
    memmove(p->buf, start, (size_t)p->len);
    if (p->len == (int)sizeof p->buf - 1)
        p->len = 0;   /* a line longer than any report: not one of ours */
}

void channel_receive(struct watch_channel *c, void (*on_report)(const struct watch_report *, void *),
                     void (*on_lost)(int rank, void *), void *arg)
{
    if (c->listen_fd >= 0)
        accept_peers(c);
    for (int i = 0; i < c->num_peers; i++)
        if (c->peers[i].fd >= 0)
            read_peer(&c->peers[i], on_report, on_lost, arg);
}

void channel_close(struct watch_channel *c)
{
    for (int i = 0; i < c->num_peers; i++)
        if (c->peers[i].fd >= 0)
            close(c->peers[i].fd);
    free(c->peers);
    if (c->listen_fd >= 0)
        close(c->listen_fd);
    if (c->fd >= 0)
        close(c->fd);
    *c = (struct watch_channel){.listen_fd = -1, .fd = -1};
}
