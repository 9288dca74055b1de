"""torch_peer.py - the PyTorch peer of dtrain-train: the same model shapes, batch, optimizer and
thread count, synthetic inputs, samples/s of whole training steps (forward, loss, backward,
Adam step). Run with Debian's python3-torch: /usr/bin/python3 bench/torch_peer.py MODEL BATCH
THREADS STEPS. Prints one line: "MODEL SAMPLES_PER_SEC"."""
import os
import sys

model_name, batch, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
# Threads must be fixed before torch is imported, or its pools start with every core.
for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ[var] = str(threads)

import time  # noqa: E402

import torch  # noqa: E402

torch.set_num_threads(threads)
torch.manual_seed(1)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_models import MODELS, training_step  # noqa: E402

step = training_step(MODELS[model_name](), batch)
for _ in range(3):  # warm up allocators and oneDNN's primitive caches (dtrain's side skips 3 too)
    step()
start = time.perf_counter()
for _ in range(steps):
    step()
print(model_name, f"{steps * batch / (time.perf_counter() - start):.2f}")
