/* testutil.c - run tools and build environments for the tests (see testutil.h). */
#include "tests/testutil.h"

#include "common/hostlist.h"

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

static void append_text(char **buf, size_t *len, const char *data, size_t n)
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
                append_text(bufs[i], &lens[i], chunk, (size_t)n);
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
    const char *keep[] = {"PATH", "HOME", "ASAN_OPTIONS", "UBSAN_OPTIONS", "LSAN_OPTIONS", "TSAN_OPTIONS", "DTRAIN_TOPO_CACHE",
                          "TMPDIR"};
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

int tu_count(const char *haystack, const char *needle)
{
    int n = 0;
    for (const char *at = haystack; at && (at = strstr(at, needle)); at++)
        n++;
    return n;
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


/* text with every occurrence of from replaced by to; the caller frees it. */
static char *replaced_copy(const char *text, const char *from, const char *to)
{
    size_t n = 0, from_len = strlen(from), to_len = strlen(to);
    for (const char *p = text; from_len && (p = strstr(p, from)); p += from_len)
        n++;
    char *out = malloc(strlen(text) + n * to_len + 1), *w = out;
    if (!out)
        return NULL;
    for (const char *p = text, *hit; ; p = hit + from_len) {
        hit = from_len ? strstr(p, from) : NULL;
        size_t keep = hit ? (size_t)(hit - p) : strlen(p);
        memcpy(w, p, keep), w += keep;
        if (!hit)
            break;
        memcpy(w, to, to_len), w += to_len;
    }
    *w = '\0';
    return out;
}

/* The first line where a and b differ (1-based), copied into the two buffers. */
static int first_difference(const char *a, const char *b, char *line_a, char *line_b, size_t size)
{
    for (int line = 1;; line++) {
        size_t la = strcspn(a, "\n"), lb = strcspn(b, "\n");
        if (la != lb || memcmp(a, b, la) != 0 || (a[la] == '\0') != (b[lb] == '\0')) {
            snprintf(line_a, size, "%.*s%s", (int)la, a, a[la] || la ? "" : "(end of text)");
            snprintf(line_b, size, "%.*s%s", (int)lb, b, b[lb] || lb ? "" : "(end of text)");
            return line;
        }
        if (a[la] == '\0')
            return 0;
        a += la + 1, b += lb + 1;
    }
}

bool tu_golden(const char *name, const char *actual)
{
    char fixtures[4096], path[4200];
    tu_fixture(fixtures, sizeof fixtures, "");
    fixtures[strlen(fixtures) - 1] = '\0';   /* no trailing '/' */
    snprintf(path, sizeof path, "%s/../golden/%s", fixtures, name);
    char *text = replaced_copy(actual, fixtures, "$FIXTURES");
    if (!text)
        return false;
    bool same = false;
    const char *update = getenv("DTRAIN_UPDATE_GOLDEN");
    if (update && strcmp(update, "1") == 0) {
        FILE *f = fopen(path, "w");
        same = f && fputs(text, f) >= 0;
        same = (f && fclose(f) == 0) && same;
        fprintf(stderr, "golden: wrote %s\n", path);
        free(text);
        return same;
    }
    FILE *f = fopen(path, "r");
    char *expected = f ? calloc(1, TU_OUTPUT_MAX + 1) : NULL;
    if (!f || !expected) {
        fprintf(stderr, "golden: %s: %s (DTRAIN_UPDATE_GOLDEN=1 writes it)\n", path, f ? "out of memory" : strerror(errno));
    } else {
        size_t got = fread(expected, 1, TU_OUTPUT_MAX, f);
        expected[got] = '\0';
        char want[512], have[512];
        int line = first_difference(expected, text, want, have, sizeof want);
        same = line == 0;
        if (!same)
            fprintf(stderr, "golden: %s:%d differs\n  expected: %s\n  printed:  %s\n(if the change is meant, "
                    "update the file: make golden)\n", path, line, want, have);
    }
    if (f)
        fclose(f);
    free(expected);
    free(text);
    return same;
}

int tu_run_tool(const char *tool, char *const *args, struct tu_result *result)
{
    char *argv[32] = {(char *)tu_bin(tool)};
    for (int i = 0; args[i] && i < 30; i++)
        argv[i + 1] = args[i];
    struct tu_env env = {0};
    tu_env_basics(&env);
    int rc = tu_run(argv, env.vars, result);
    tu_env_free(&env);
    return rc;
}

int tu_write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    if (!f)
        return -1;
    int rc = fputs(text, f) < 0 ? -1 : 0;
    return fclose(f) != 0 ? -1 : rc;
}

char *tu_read_file(const char *path)
{
    FILE *f = fopen(path, "r");
    if (!f)
        return NULL;
    char *text = calloc(1, TU_OUTPUT_MAX + 1);
    if (text)
        text[fread(text, 1, TU_OUTPUT_MAX, f)] = '\0';
    fclose(f);
    return text;
}

bool tu_under_thread_sanitizer(void)
{
#if defined(__SANITIZE_THREAD__)
    return true;
#elif defined(__has_feature)
#if __has_feature(thread_sanitizer)
    return true;
#else
    return false;
#endif
#else
    return false;
#endif
}
