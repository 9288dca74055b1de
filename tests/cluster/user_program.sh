#!/bin/sh
# tests/cluster/user_program.sh - a program nobody here wrote, standing for a user's own script: it
# reads the env:// variables dtrain exports (as torch.distributed would), works a second and, on
# rank 0, prints a Step line in the reference format, which the job template reads into the record.
for v in RANK WORLD_SIZE LOCAL_RANK MASTER_ADDR MASTER_PORT; do
    eval "[ -n \"\${$v:-}\" ]" || { echo "user_program: $v is not set" >&2; exit 3; }
done
sleep 1
[ "$RANK" = 0 ] && echo "Step10: $((WORLD_SIZE * 100)).00 data/sec"
exit 0
