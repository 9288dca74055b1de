/* watch_channel.h - how the watchers of one step talk: every rank's watcher sends rank 0's a line
 * a second over TCP ("how long since my program last progressed, and what it is doing"), on a port
 * of the step's own (launch_watch_port), so rank 0 can tell which rank the others wait for.
 *
 * A report line: "progress RANK AGE_MS HOST STATE...\n" (the age, not a time: the nodes' clocks
 * need not agree), and "done RANK STATUS\n" when the rank's program has ended. */
#ifndef WATCH_CHANNEL_H
#define WATCH_CHANNEL_H

#include <poll.h>
#include <stdbool.h>

#include "common/dt_error.h"

#define WATCH_LINE_MAX 256
#define WATCH_MAX_PEERS 4096

struct watch_peer {
    int fd;                   /* -1 once closed */
    int rank;                 /* -1 until its first line */
    char buf[WATCH_LINE_MAX];
    int len;
};

struct watch_channel {
    bool is_rank0;
    int listen_fd;            /* rank 0: -1 when it could not listen */
    struct watch_peer *peers; /* rank 0: one per connection */
    int num_peers;
    int fd;                   /* the others: the connection to rank 0, -1 when none */
    bool connecting;          /* a non-blocking connect is under way on fd */
    char rank0_host[256];
    int port;
};

/* One report line as read by rank 0. */
struct watch_report {
    bool done;
    int rank;
    long age_ms;              /* progress */
    int status;               /* done */
    char host[64];
    char state[96];
};

/* Rank 0: listen on port (every address). 0, or -1 with err naming the port. */
int channel_listen(struct watch_channel *c, int port, struct dt_err *err);

/* The others: remember where rank 0 listens; channel_send connects when it can. */
void channel_open_to(struct watch_channel *c, const char *rank0_host, int port);

/* Sends one line to rank 0, connecting (non-blocking) first where no connection is up; a line that
 * cannot go now is dropped (the next second's replaces it). */
void channel_send(struct watch_channel *c, const char *line);

/* The descriptors to poll (listen and peers, or a connect under way): appended to fds. */
int channel_poll_fds(const struct watch_channel *c, struct pollfd *fds, int max);

/* Rank 0: accept connections and read lines after poll; each whole report goes to on_report.
 * A peer whose connection closes calls on_lost with its rank (-1 when it never said). */
void channel_receive(struct watch_channel *c, void (*on_report)(const struct watch_report *, void *),
                     void (*on_lost)(int rank, void *), void *arg);

/* Reads one report line; 0, or -1 when it is not one. */
int channel_parse(const char *line, struct watch_report *r);

void channel_close(struct watch_channel *c);

#endif
