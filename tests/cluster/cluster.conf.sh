# shellcheck shell=sh disable=SC2034  # sourced: the variables are its output
# tests/cluster/cluster.conf.sh - where the test cluster lives; sourced by up.sh, down.sh, env.sh.
# DTRAIN_CLUSTER_ID names one cluster (letters and digits, up to 12): its namespaces are ID-ctl
# (slurmctld, the login node) and ID-gn01..04, its directory /run/dtrain-cluster-ID (the default id
# "dtc", the cluster started by hand, keeps /run/dtrain-cluster). Scripts that start a cluster for
# themselves (the cluster tests, the demo, the method bench) take a fresh id, dtcPID, so two of
# them can run on one machine at once; each brings down only its own. DTRAIN_CLUSTER_DIR holds
# everything a cluster writes (configs, munge key and socket, state, logs, the client wrappers).
DTC_ID=${DTRAIN_CLUSTER_ID:-dtc}
case $DTC_ID in
    *[!a-z0-9]* | "" | ?????????????*)
        echo "DTRAIN_CLUSTER_ID=\"$DTC_ID\": 1 to 12 lower-case letters and digits" >&2; exit 2 ;;
esac
if [ "$DTC_ID" = dtc ]; then DTC_DIR=${DTRAIN_CLUSTER_DIR:-/run/dtrain-cluster}
else DTC_DIR=${DTRAIN_CLUSTER_DIR:-/run/dtrain-cluster-$DTC_ID}; fi
DTC_NET=10.77.0                 # exists only inside the namespaces up.sh makes
DTC_NODES="gn01 gn02 gn03 gn04"
DTC_PREFIX=$DTC_ID              # namespace names: ID-ctl, ID-gn01, ...

# tc_rate_bits RATE: a link rate as tc writes it (5gbit, 1250mbit, 500kbit) in bits/s, the one
# reading of that form for the link shaping (link.sh), the bench's dilated rates and link_check.
# Returns 1, printing nothing, for anything else.
tc_rate_bits() {
    echo "$1" | awk '$0 !~ /^[0-9]+(\.[0-9]+)?[gmk]bit$/ || $0 + 0 <= 0 { exit 1 }
        { u = substr($0, length($0) - 3); printf "%.0f\n", ($0 + 0) * (u == "gbit" ? 1e9 : u == "mbit" ? 1e6 : 1e3) }'
}
