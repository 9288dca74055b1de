#!/usr/bin/python3
"""tests/cluster/resumable.py DIR STEPS - a user's own data-parallel program that resumes from its
own checkpoints, for the template's spares: each step computes a little (about 50 ms) and sums
rank + step over the ranks (mpi4py's allreduce) into a running total; rank 0 writes the total and
the step to DIR/checkpoint every 20 steps (atomically: a temporary file renamed) and starts from it
when it is there, as a restarted step must. Rank 0 prints a Step line every 10 steps (the form
dtrain-record reads), "resumed from step S at EPOCH_SECONDS (restart R)" when it resumed
(R: the template's DTRAIN_RESTART_COUNT), and "total T" at the end: the same T however many times
the step was started again."""
import json
import os
import sys
import time

from mpi4py import MPI

folder, steps = sys.argv[1], int(sys.argv[2])
comm = MPI.COMM_WORLD
rank, size = comm.Get_rank(), comm.Get_size()
path = os.path.join(folder, "checkpoint")


def compute(seconds=0.05):
    end = time.perf_counter() + seconds
    while time.perf_counter() < end:
        pass


state = {"step": 0, "total": 0}
if rank == 0 and os.path.exists(path):
    with open(path) as f:
        state = json.load(f)
    print(f"resumed from step {state['step']} at {time.time():.3f} "
          f"(restart {os.environ.get('DTRAIN_RESTART_COUNT', '-')})", flush=True)
state = comm.bcast(state)
begun, first = time.perf_counter(), state["step"]
for step in range(state["step"], steps):
    compute()
    state["total"] += comm.allreduce(rank + step)
    state["step"] = step + 1
    if rank == 0 and state["step"] % 20 == 0:
        with open(path + ".tmp", "w") as f:
            json.dump(state, f)
        os.replace(path + ".tmp", path)
    if rank == 0 and state["step"] % 10 == 0:
        rate = size * (state["step"] - first) / max(time.perf_counter() - begun, 1e-9)
        print(f"Step{state['step']}: {rate:.2f} data/sec", flush=True)
if rank == 0:
    print(f"total {state['total']}", flush=True)
