"""ddp_peer.py - the data-parallel PyTorch peer: DistributedDataParallel over gloo, started by
torchrun, the same models, per-rank batch, Adam and threads as dtrain-train under mpirun.
  /usr/bin/python3 -m torch.distributed.run --standalone --nproc_per_node W --redirects 2 --tee 2 \\
      bench/ddp_peer.py MODEL BATCH THREADS STEPS
Rank 0 prints one line: "MODEL WORLD SAMPLES_PER_SEC" (samples of all ranks)."""
import os
import sys

model_name, batch, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(threads)

import time  # noqa: E402

import torch  # noqa: E402
import torch.distributed as dist  # noqa: E402
from torch.nn.parallel import DistributedDataParallel  # noqa: E402

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_models import MODELS, training_step  # noqa: E402

torch.set_num_threads(threads)
dist.init_process_group("gloo")
rank, world = dist.get_rank(), dist.get_world_size()
torch.manual_seed(1)
step = training_step(DistributedDataParallel(MODELS[model_name]()), batch)
for _ in range(3):
    step()
dist.barrier()
start = time.perf_counter()
for _ in range(steps):
    step()
dist.barrier()
if rank == 0:
    print(model_name, world, f"{world * steps * batch / (time.perf_counter() - start):.2f}", flush=True)
dist.destroy_process_group()
