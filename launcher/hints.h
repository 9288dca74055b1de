/* hints.h - what dtrain says when a user's command line or step looks like another tool's habit:
 * mpirun's options given to dtrain, and an MPI program in an srun step started without PMIx
 * (Open MPI then stops with "OPAL ERROR: Unreachable", naming nothing a user can act on). */
#ifndef HINTS_H
#define HINTS_H

#include <stdbool.h>
#include <stdio.h>

/* When arg is one of mpirun's options (-np, --map-by, -H, --hostfile, ...), says where it goes
 * and returns true. */
bool hint_mpirun_option(FILE *out, const char *arg);

/* Whether the program argv[0] (a path, or a name looked up in path_env) starts MPI: an ELF file
 * that loads an MPI library, or a Python script that imports mpi4py (run as ./train.py, or as
 * python3 train.py). */
bool hint_program_uses_mpi(char *const *argv, const char *path_env);
/* What a message about it names: the script a Python interpreter runs, else argv[0]. */
const char *hint_program_file(char *const *argv);

/* This process is in an srun step without PMIx: SLURM_STEP_ID set, and neither PMIX_RANK nor
 * SLURM_MPI_TYPE=pmix*. */
bool hint_step_lacks_pmix(void);

#endif
