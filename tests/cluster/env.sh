# shellcheck shell=sh
# tests/cluster/env.sh - source it to use the test cluster from a shell: the client wrappers first
# in PATH, SLURM_CONF set (a Slurm client without a config looks its controller up in DNS).
. "$(dirname "${DTRAIN_CLUSTER_ENV_FROM:-tests/cluster/env.sh}")/cluster.conf.sh"
export SLURM_CONF="$DTC_DIR/etc/slurm.conf"
PATH="$DTC_DIR/bin:$PATH"
export PATH
