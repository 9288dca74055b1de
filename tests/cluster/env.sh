# shellcheck shell=sh
# tests/cluster/env.sh - source it to use the test cluster from a shell: the client wrappers first
# in PATH, SLURM_CONF set (a Slurm client without a config looks its controller up in DNS).
# A sourced file does not know its own path in POSIX sh: bash says it (BASH_SOURCE); other shells
# need DTRAIN_CLUSTER_ENV_FROM=/path/to/tests/cluster/env.sh or the repository root as the current
# directory. Without cluster.conf.sh beside it nothing is set (srun would then retry
# /etc/slurm/slurm.conf for a minute): it says so and returns 1.
# shellcheck disable=SC3028 # BASH_SOURCE: empty outside bash, then the fallbacks
dtc_env=${DTRAIN_CLUSTER_ENV_FROM:-${BASH_SOURCE:-tests/cluster/env.sh}}
if [ -f "$(dirname "$dtc_env")/cluster.conf.sh" ]; then
    . "$(dirname "$dtc_env")/cluster.conf.sh"
    export SLURM_CONF="$DTC_DIR/etc/slurm.conf"
    PATH="$DTC_DIR/bin:$PATH"
    export PATH
else
    echo "tests/cluster/env.sh: no cluster.conf.sh beside $dtc_env (from $(pwd)): source it from the repository" \
        "root, from bash, or with DTRAIN_CLUSTER_ENV_FROM=/path/to/tests/cluster/env.sh" >&2
    # shellcheck disable=SC2317 # return where sourced, exit where run
    return 1 2>/dev/null || exit 1
fi
