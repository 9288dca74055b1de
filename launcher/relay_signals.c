/* relay_signals.c - signals caught into a pipe for a supervisor's poll loop (relay_signals.h). */
#include "launcher/relay_signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

static int signal_pipe[2] = {-1, -1};
static const int relayed[] = {SIGINT, SIGTERM, SIGHUP, SIGUSR1, SIGUSR2};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char byte = (unsigned char)sig;
    ssize_t ignored = write(signal_pipe[1], &byte, 1);   /* full pipe: a wake-up is already pending */
    (void)ignored;
    errno = saved;
}

int relay_signals_install(struct dt_err *err)
{
    if (signal_pipe[0] < 0 && pipe2(signal_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
        return dt_fail(err, "cannot create the signal pipe: %s", strerror(errno));
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof relayed / sizeof relayed[0]; i++)
        sigaction(relayed[i], &sa, NULL);
    sa.sa_flags |= SA_NOCLDSTOP;
    sigaction(SIGCHLD, &sa, NULL);
    return 0;
}

int relay_signals_fd(void)
{
    return signal_pipe[0];
}

int relay_signals_take(int *sigs, int max)
{
    unsigned char bytes[64];
    int count = 0;
    ssize_t n;
    while (count < max && (n = read(signal_pipe[0], bytes, sizeof bytes < (size_t)(max - count) ? sizeof bytes
                                                                                                   : (size_t)(max - count))) > 0)
        for (ssize_t i = 0; i < n; i++)
            sigs[count++] = bytes[i];
    return count;
}

void relay_signals_reset_in_child(void)
{
    for (size_t i = 0; i < sizeof relayed / sizeof relayed[0]; i++)
        signal(relayed[i], SIG_DFL);
    signal(SIGCHLD, SIG_DFL);
    sigset_t none;
    sigemptyset(&none);
    sigprocmask(SIG_SETMASK, &none, NULL);
}
