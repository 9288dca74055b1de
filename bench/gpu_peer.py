"""gpu_peer.py - the PyTorch eager peer of `dtrain-train --device cuda` (bench/gpu_vs_torch.sh).

The same work as dtrain-train's step: torchvision's ResNet (10 classes; for images under 64 px
the small-image stem dtrain builds, a 3x3 stride-1 convolution and no max pool), Adam, each batch
copied from pinned host memory (non_blocking, as a DataLoader with pin_memory=True), the loss read
back every step (dtrain logs it), fp32 with TF32 allowed or bf16 autocast, cuDNN's heuristics or
its timed choice (cudnn.benchmark). One process runs every configuration given, so PyTorch's start
(seconds) is paid once.

usage: gpu_peer.py STEPS WARMUP CONFIG...   CONFIG = MODEL:HxWxC:BATCH:fp32|bf16:heuristic|find
prints one line per configuration: CONFIG IMAGES_PER_SEC
(PEER_DEVICE=cpu runs it on the CPU, fp32 only: a check of this script where no GPU is.)
"""
import os
import sys
import time

import torch
import torchvision
from torch import nn


DEVICE = os.environ.get("PEER_DEVICE", "cuda")


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()


def build(model, channels, side):
    net = getattr(torchvision.models, model)(num_classes=10)
    if side < 64:   # dtrain's small-image stem (trainer/nn/models.c)
        net.conv1 = nn.Conv2d(channels, 64, 3, 1, 1, bias=False)
        net.maxpool = nn.Identity()
    elif channels != 3:
        net.conv1 = nn.Conv2d(channels, 64, 7, 2, 3, bias=False)
    return net.to(DEVICE)


def measure(config, steps, warmup):
    model, shape, batch, precision, algo = config.split(":")[:5]   # a 6th field is dtrain's alone
    h, w, c = (int(v) for v in shape.split("x"))
    batch = int(batch)
    torch.backends.cudnn.benchmark = algo == "find"
    net = build(model, c, h)
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1)
    # two pinned host batches, alternated, as the loader's double buffer
    host_x = [torch.rand(batch, c, h, w, generator=gen).mul_(2).sub_(1) for _ in range(2)]
    host_y = [torch.randint(0, 10, (batch,), generator=gen) for _ in range(2)]
    if DEVICE == "cuda":
        host_x, host_y = [t.pin_memory() for t in host_x], [t.pin_memory() for t in host_y]
    bf16 = precision == "bf16"

    def step(i):
        x = host_x[i % 2].to(DEVICE, non_blocking=True)
        y = host_y[i % 2].to(DEVICE, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(net(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    for i in range(warmup):
        step(i)
    sync()
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    sync()
    return steps * batch / (time.perf_counter() - start)


def main():
    if len(sys.argv) < 4:
        sys.exit(__doc__)
    steps, warmup = int(sys.argv[1]), int(sys.argv[2])
    torch.backends.cuda.matmul.allow_tf32 = True   # dtrain's fp32 mode: TF32 GEMMs and convolutions
    torch.backends.cudnn.allow_tf32 = True
    for config in sys.argv[3:]:
        print(config, "%.1f" % measure(config, steps, warmup), flush=True)
        if DEVICE == "cuda":
            torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
