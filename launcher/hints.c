/* hints.c - pointers for habits from other launchers (see hints.h). */
#include "launcher/hints.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* Options of mpirun (Open MPI's and MPICH's) a user may carry over, of those dtrain does not have. */
static const char *const mpirun_options[] = {"-np", "-npernode", "--npernode", "--map-by", "-map-by", "--bind-to",
                                             "-bind-to", "-H", "--host", "-host", "--hostfile", "-hostfile",
                                             "--oversubscribe", "-oversubscribe", "-x", "--mca", "-mca", "-ppn"};

bool hint_mpirun_option(FILE *out, const char *arg)
{
    for (size_t i = 0; arg && i < sizeof mpirun_options / sizeof mpirun_options[0]; i++) {
        size_t len = strlen(mpirun_options[i]);
        if (strncmp(arg, mpirun_options[i], len) != 0 || (arg[len] != '\0' && arg[len] != '='))
            continue;
        fprintf(out, "dtrain: %s is mpirun's option, not dtrain's. Under mpirun, mpirun's options go first: mpirun "
                "%s ... dtrain [options] -- PROGRAM (dtrain reads the ranks mpirun gives); for ranks on this "
                "machine alone: dtrain --ranks N -- PROGRAM\n", arg, arg);
        return true;
    }
    return false;
}

/* The file program names: itself when it has a '/', else the first executable of that name on path_env. */
static bool resolve_in_path(const char *program, const char *path_env, char *out, size_t size)
{
    if (strchr(program, '/'))
        return snprintf(out, size, "%s", program) < (int)size;
    for (const char *dir = path_env; dir && *dir;) {
        size_t len = strcspn(dir, ":");
        if (snprintf(out, size, "%.*s/%s", (int)(len ? len : 1), len ? dir : ".", program) < (int)size &&
            access(out, X_OK) == 0)
            return true;
        dir += len + (dir[len] == ':');
    }
    return false;
}

/* The first bytes of a file (up to 1 MiB, into a static buffer): how many, 0 when unreadable. */
static size_t head_of(const char *path, char **head)
{
    static char buffer[1 << 20];
    FILE *f = fopen(path, "rb");
    size_t n = f ? fread(buffer, 1, sizeof buffer, f) : 0;
    if (f)
        fclose(f);
    *head = buffer;
    return n;
}

/* A Python script that imports mpi4py ("import mpi4py", "from mpi4py import MPI"): MPI_Init runs
 * at that import. */
static bool script_imports_mpi4py(const char *head, size_t n)
{
    for (const char *at = memmem(head, n, "mpi4py", 6); at; at = memmem(at + 1, n - (size_t)(at + 1 - head), "mpi4py", 6)) {
        const char *line = at;
        while (line > head && line[-1] != '\n')
            line--;
        line += strspn(line, " \t");
        if (strncmp(line, "import ", 7) == 0 || strncmp(line, "from ", 5) == 0)
            return true;
    }
    return false;
}

/* For a Python interpreter, the script it is given (NULL otherwise). */
static const char *file_to_read(char *const *argv)
{
    const char *base = strrchr(argv[0], '/') ? strrchr(argv[0], '/') + 1 : argv[0];
    if (strncmp(base, "python", 6) == 0 && argv[1] && argv[1][0] != '-')
        return argv[1];
    return NULL;
}

const char *hint_program_file(char *const *argv)
{
    const char *script = file_to_read(argv);
    return script ? script : argv[0];
}

bool hint_program_uses_mpi(char *const *argv, const char *path_env)
{
    char path[4096];
    char *head;
    if (!argv || !argv[0] || !resolve_in_path(argv[0], path_env, path, sizeof path))
        return false;
    const char *script = file_to_read(argv);
    size_t n = head_of(script ? script : path, &head);
    if (script || (n >= 2 && head[0] == '#' && head[1] == '!'))   /* python3 train.py, or ./train.py */
        return script_imports_mpi4py(head, n);
    if (n < 4 || memcmp(head, "\x7f" "ELF", 4) != 0)
        return false;
    /* An ELF names the libraries it loads in its dynamic string table, near its start. */
    static const char *const libraries[] = {"libmpi.so", "libmpich.so"};
    for (size_t i = 0; i < 2; i++)
        if (memmem(head, n, libraries[i], strlen(libraries[i])))
            return true;
    return false;
}

bool hint_step_lacks_pmix(void)
{
    const char *step = getenv("SLURM_STEP_ID"), *type = getenv("SLURM_MPI_TYPE");
    if (!step || !*step || getenv("PMIX_RANK"))
        return false;
    return !type || strncmp(type, "pmix", 4) != 0;
}

/* A count in the environment variable name above 1. */
static bool env_above_one(const char *name)
{
    const char *value = getenv(name);
    return value && atoi(value) > 1;
}

bool hint_het_step_under_pmix(void)
{
    const char *type = getenv("SLURM_MPI_TYPE");
    if (!type || strncmp(type, "pmix", 4) != 0)
        return false;
    return env_above_one("SLURM_HET_SIZE") || env_above_one("SLURM_PACK_SIZE");
}

int hint_slurm_version_parse(const char *text)
{
    const char *at = text ? strstr(text, "slurm") : NULL;
    if (!at)
        return 0;
    at += strcspn(at, " \t\n");   /* past "slurm" or "slurm-wlm" */
    int major, minor;
    if (sscanf(at, " %d.%d", &major, &minor) != 2 || major < 0 || minor < 0 || minor > 99 || major > 999)
        return 0;
    return major * 100 + minor;
}

/* Reads what child writes to fd until it closes it or is silent for 2 s; then reaps it (SIGKILL
 * first when it is still running: only this child, by its pid). */
static void read_child(pid_t child, int fd, char *out, size_t size)
{
    size_t n = 0;
    struct pollfd wait_for = {.fd = fd, .events = POLLIN};
    while (n + 1 < size && poll(&wait_for, 1, 2000) > 0) {
        ssize_t got = read(fd, out + n, size - 1 - n);
        if (got <= 0)
            break;
        n += (size_t)got;
    }
    out[n] = '\0';
    if (waitpid(child, NULL, WNOHANG) == 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
    }
}

int hint_slurm_version(void)
{
    int fds[2];
    if (pipe(fds) < 0)
        return 0;
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    posix_spawn_file_actions_adddup2(&actions, fds[1], STDOUT_FILENO);
    posix_spawn_file_actions_addclose(&actions, fds[0]);
    posix_spawn_file_actions_addopen(&actions, STDERR_FILENO, "/dev/null", O_WRONLY, 0);
    char *argv[] = {(char *)"srun", (char *)"--version", NULL};
    pid_t child;
    int rc = posix_spawnp(&child, "srun", &actions, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&actions);
    close(fds[1]);
    char text[256] = "";
    if (rc == 0)
        read_child(child, fds[0], text, sizeof text);
    close(fds[0]);
    return hint_slurm_version_parse(text);
}

void hint_warn_het_step(FILE *out, int version)
{
    char which[64] = "a Slurm of unknown version";
    if (version > 0)
        snprintf(which, sizeof which, "Slurm %d.%02d", version / 100, version % 100);
    fprintf(out, "dtrain: warning: a heterogeneous step (srun A : B) under srun --mpi=pmix from %s: srun older "
            "than 24.11 can hang after every rank has ended, or abort with \"double free or corruption\" (its "
            "PMIx abort agent, fixed in Slurm 24.11: \"mpi/pmix - Prevent multiple abort agents\"). Bound the step "
            "(srun --time, or timeout), or run it as one component: srun -N2 -n5 -w NODES gives an uneven split "
            "too (docs/launcher.md)\n", which);
}
