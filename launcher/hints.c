/* hints.c - pointers for habits from other launchers (see hints.h). */
#include "hints.h"

#include <stdlib.h>
#include <string.h>
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
static bool resolve(const char *program, const char *path_env, char *out, size_t size)
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

bool hint_program_uses_mpi(const char *program, const char *path_env)
{
    char path[4096];
    if (!program || !resolve(program, path_env, path, sizeof path))
        return false;
    FILE *f = fopen(path, "rb");
    if (!f)
        return false;
    /* An ELF names the libraries it loads in its dynamic string table, near its start. */
    static char head[1 << 20];
    size_t n = fread(head, 1, sizeof head, f);
    fclose(f);
    if (n < 4 || memcmp(head, "\x7f" "ELF", 4) != 0)
        return false;
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
