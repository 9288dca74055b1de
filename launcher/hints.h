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

/* This process is in a heterogeneous srun step (srun A : B; SLURM_HET_SIZE or, as Slurm 20.02
 * named it, SLURM_PACK_SIZE above 1) under srun's PMIx plugin (SLURM_MPI_TYPE=pmix*). Before
 * Slurm 24.11 such a step can hang after every rank has ended, or abort with "double free or
 * corruption": srun starts an abort agent per component on one thread handle without a lock
 * (fixed in 24.11, "mpi/pmix - Prevent multiple abort agents"). */
bool hint_het_step_under_pmix(void);

/* The Slurm version in what "srun --version" prints ("slurm 24.11.1", "slurm-wlm 22.05.8") as
 * major * 100 + minor (2205), or 0 when text holds none. */
int hint_slurm_version_parse(const char *text);

/* The version of the srun first in PATH, as hint_slurm_version_parse gives it; 0 when srun cannot
 * be run or says nothing in 2 s (a configless client looking its controller up). */
int hint_slurm_version(void);

/* The warning for a heterogeneous step under PMIx from Slurm older than 24.11 (version 0: unknown). */
void hint_warn_het_step(FILE *out, int version);

#endif
