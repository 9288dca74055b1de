# shellcheck shell=sh disable=SC2034  # sourced: the variables are its output
# tests/cluster/cluster.conf.sh - where the test cluster lives; sourced by up.sh, down.sh, env.sh.
# DTRAIN_CLUSTER_DIR holds everything it writes (configs, munge key and socket, state, logs, the
# client wrappers); the namespaces are named dtc-ctl (slurmctld, the login node) and dtc-gn01..04.
DTC_DIR=${DTRAIN_CLUSTER_DIR:-/run/dtrain-cluster}
DTC_NET=10.77.0                 # exists only inside the namespaces up.sh makes
DTC_NODES="gn01 gn02 gn03 gn04"
DTC_PREFIX=dtc                  # namespace names: dtc-ctl, dtc-gn01, ...
