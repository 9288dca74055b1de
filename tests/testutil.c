/* testutil.c - run tools and build environments for the tests (see testutil.h). */
#include "testutil.h"

#include "hostlist.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static long now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

static void append(char **buf, size_t *len, const char *data, size_t n)
{
    if (*len + n >= TU_OUTPUT_MAX)
        n = TU_OUTPUT_MAX - 1 - *len;
    memcpy(*buf + *len, data, n);
    *len += n;
    (*buf)[*len] = '\0';
}

int tu_run(char *const *argv, char *const *envp, struct tu_result *result)
{
    int out_pipe[2], err_pipe[2];
    if (pipe(out_pipe) < 0 || pipe(err_pipe) < 0)
        return -1;
    long start = now_ms();
    pid_t pid = fork();
    if (pid < 0)
        return -1;
    if (pid == 0) {
        dup2(out_pipe[1], 1);
        dup2(err_pipe[1], 2);
        close(out_pipe[0]), close(out_pipe[1]), close(err_pipe[0]), close(err_pipe[1]);
        execve(argv[0], argv, envp ? envp : environ);
        fprintf(stderr, "tu_run: cannot exec %s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    close(out_pipe[1]);
    close(err_pipe[1]);
    result->out = calloc(1, TU_OUTPUT_MAX);
    result->err = calloc(1, TU_OUTPUT_MAX);
    size_t lens[2] = {0, 0};
    char **bufs[2] = {&result->out, &result->err};
    struct pollfd fds[2] = {{.fd = out_pipe[0], .events = POLLIN}, {.fd = err_pipe[0], .events = POLLIN}};
    int open_fds = 2;
    while (open_fds > 0) {
        if (poll(fds, 2, -1) < 0 && errno != EINTR)
            break;
        for (int i = 0; i < 2; i++) {
            if (fds[i].fd < 0 || !(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            char chunk[4096];
            ssize_t n = read(fds[i].fd, chunk, sizeof chunk);
            if (n > 0) {
                append(bufs[i], &lens[i], chunk, (size_t)n);
            } else {
                close(fds[i].fd);
                fds[i].fd = -1;
                open_fds--;
            }
        }
    }
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
        ;
    result->elapsed_ms = now_ms() - start;
    result->status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    return 0;
}

void tu_result_free(struct tu_result *result)
{
    free(result->out);
    free(result->err);
    result->out = result->err = NULL;
}

const char *tu_bin(const char *name)
{
    static char paths[8][4096];
    static int next;
    const char *dir = getenv("DTRAIN_TEST_BIN");
    char *path = paths[next++ % 8];
    snprintf(path, sizeof paths[0], "%s/%s", dir ? dir : "build/test/bin", name);
    return path;
}

static ssize_t find_var(const struct tu_env *env, const char *name)
{
    size_t len = strlen(name);
    for (size_t i = 0; i < env->count; i++)
        if (strncmp(env->vars[i], name, len) == 0 && env->vars[i][len] == '=')
            return (ssize_t)i;
    return -1;
}

void tu_env_set(struct tu_env *env, const char *name, const char *value)
{
    size_t size = strlen(name) + strlen(value) + 2;
    char *var = malloc(size);
    snprintf(var, size, "%s=%s", name, value);
    ssize_t at = find_var(env, name);
    if (at >= 0) {
        free(env->vars[at]);
        env->vars[at] = var;
        return;
    }
    env->vars = realloc(env->vars, (env->count + 2) * sizeof *env->vars);
    env->vars[env->count++] = var;
    env->vars[env->count] = NULL;
}

void tu_env_unset(struct tu_env *env, const char *name)
{
    ssize_t at = find_var(env, name);
    if (at < 0)
        return;
    free(env->vars[at]);
    memmove(&env->vars[at], &env->vars[at + 1], (env->count - (size_t)at) * sizeof *env->vars);
    env->count--;
}

void tu_fixture(char *path, size_t size, const char *relative)
{
    const char *dir = getenv("DTRAIN_FIXTURES");
    snprintf(path, size, "%s/%s", dir ? dir : "tests/fixtures", relative);
}

bool tu_shared(char *path, size_t size, const char *relative)
{
    const char *dir = getenv("DTRAIN_SHARED");
    if (dir)
        snprintf(path, size, "%s/%s", dir, relative);
    return dir != NULL;
}

void tu_env_load(struct tu_env *env, const char *fixture)
{
    char path[4096], relative[512];
    snprintf(relative, sizeof relative, "env/%s", fixture);
    tu_fixture(path, sizeof path, relative);
    FILE *f = fopen(path, "r");
    if (!f) {
        fprintf(stderr, "tu_env_load: cannot open %s: %s\n", path, strerror(errno));
        abort();
    }
    char line[8192];
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        char *eq = strchr(line, '=');
        if (line[0] == '#' || !eq)
            continue;
        *eq = '\0';
        tu_env_set(env, line, eq + 1);
    }
    fclose(f);
}

void tu_env_basics(struct tu_env *env)
{
    const char *keep[] = {"PATH", "HOME", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "DTRAIN_TOPO_CACHE", "TMPDIR"};
    for (size_t i = 0; i < sizeof keep / sizeof keep[0]; i++)
        if (getenv(keep[i]))
            tu_env_set(env, keep[i], getenv(keep[i]));
}

void tu_env_free(struct tu_env *env)
{
    for (size_t i = 0; i < env->count; i++)
        free(env->vars[i]);
    free(env->vars);
    env->vars = NULL;
    env->count = 0;
}

int tu_remove_tree(const char *dir)
{
    char *argv[] = {"/bin/rm", "-rf", "--", (char *)dir, NULL};
    struct tu_result r;
    int rc = tu_run(argv, NULL, &r) == 0 && r.status == 0 ? 0 : -1;
    tu_result_free(&r);
    return rc;
}

bool tu_contains(const char *haystack, const char *needle)
{
    bool found = haystack && strstr(haystack, needle);
    if (!found)
        fprintf(stderr, "expected to find \"%s\" in:\n---\n%s\n---\n", needle, haystack ? haystack : "(null)");
    return found;
}

char *tu_expand_joined(const char *expr)
{
    struct hostlist list;
    hostlist_init(&list);
    char *joined = NULL;
    if (hostlist_expand(expr, &list, NULL) == 0 && (joined = calloc(1, list.text_len + 1))) {
        for (size_t i = 0; i < list.count; i++) {
            if (i)
                strcat(joined, " ");
            strcat(joined, hostlist_nth(&list, i));
        }
    }
    hostlist_free(&list);
    return joined;
}

