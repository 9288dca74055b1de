#!/usr/bin/python3
"""tests/cluster/watched.py BACKEND STALL STEPS - a data-parallel job of the kind users bring, for
dtrain --watch's cluster tests: each step computes a little (about 50 ms) and then sums across the
ranks, mpi4py's allreduce (BACKEND mpi) or a PyTorch DDP model's backward over gloo (BACKEND gloo,
env:// from dtrain's exports); rank 0 prints a line a step. STALL none|stop|read: at step 5 the
rank WATCH_STALL_RANK (default 1) stops itself (SIGSTOP) or sleeps in a read that never returns,
after printing "stalling at EPOCH_SECONDS" on stderr."""
import os
import signal
import sys
import time

backend, stall, steps = sys.argv[1], sys.argv[2], int(sys.argv[3])
stall_rank = int(os.environ.get("WATCH_STALL_RANK", "1"))


def compute(seconds=0.05):
    end = time.perf_counter() + seconds
    x = 0
    while time.perf_counter() < end:
        x += 1
    return x


if backend == "mpi":
    from mpi4py import MPI
    comm = MPI.COMM_WORLD
    rank = comm.Get_rank()

    def step_sum(value):
        return comm.allreduce(value)
else:
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    dist.init_process_group("gloo")
    rank = dist.get_rank()
    model = torch.nn.parallel.DistributedDataParallel(torch.nn.Linear(64, 64))

    def step_sum(value):
        model(torch.full((8, 64), float(value))).sum().backward()   # DDP's allreduce of the gradients
        return value

for step in range(steps):
    compute()
    if stall != "none" and rank == stall_rank and step == 5:
        print(f"stalling at {time.time():.3f}", file=sys.stderr, flush=True)
        if stall == "stop":
            os.kill(os.getpid(), signal.SIGSTOP)
        else:
            never, _ = os.pipe()
            os.read(never, 1)
    step_sum(rank)
    if rank == 0:
        print(f"step {step}", flush=True)
