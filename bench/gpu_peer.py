"""gpu_peer.py - the PyTorch peer of `dtrain-train --device cuda` (bench/gpu_vs_torch.sh), run
the ways people run it: eager NCHW (PyTorch's default), eager channels-last (the model and each
batch in torch.channels_last, what NVIDIA's examples and most benchmarks use on tensor cores), and
torch.compile of the channels-last model (default mode; its compile time is printed apart and left
out of the rate; a compile that has not ended within COMPILE_LIMIT seconds, 180, is skipped with a
note; COMPILE_PRECISIONS, "fp32 bf16", says for which precisions it is tried).

The same work as dtrain-train's step: torchvision's ResNet (10 classes; for images under 64 px
the small-image stem dtrain builds, a 3x3 stride-1 convolution and no max pool), Adam, each batch
copied from pinned host memory (non_blocking, as a DataLoader with pin_memory=True), the loss read
back every step (dtrain logs it), fp32 with TF32 allowed or bf16 autocast, cuDNN's heuristics or
its timed choice (cudnn.benchmark). One process runs every configuration given, so PyTorch's start
(seconds) is paid once.

usage: gpu_peer.py STEPS WARMUP MODES CONFIG...   CONFIG = MODEL:HxWxC:BATCH:fp32|bf16:heuristic|find
MODES: comma-separated, of eager, channels-last, compile
prints one line per configuration and mode: CONFIG MODE IMAGES_PER_SEC (0 where it failed or was
skipped, with why on stderr)
(PEER_DEVICE=cpu runs it on the CPU, fp32 only: a check of this script where no GPU is.)
"""
import os
import signal
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


class TooSlow(Exception):
    pass


class Skipped(Exception):
    pass


def on_alarm(signum, frame):
    raise TooSlow()


def measure(config, mode, steps, warmup):
    model, shape, batch, precision, algo = config.split(":")[:5]   # a 6th field is dtrain's alone
    h, w, c = (int(v) for v in shape.split("x"))
    batch = int(batch)
    torch.backends.cudnn.benchmark = algo == "find"
    layout = torch.contiguous_format if mode == "eager" else torch.channels_last
    net = build(model, c, h).to(memory_format=layout)
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
    forward = torch.compile(net) if mode == "compile" else net
    loss_fn = nn.CrossEntropyLoss()
    gen = torch.Generator().manual_seed(1)
    # two pinned host batches, alternated, as the loader's double buffer
    host_x = [torch.rand(batch, c, h, w, generator=gen).mul_(2).sub_(1).contiguous(memory_format=layout)
              for _ in range(2)]
    host_y = [torch.randint(0, 10, (batch,), generator=gen) for _ in range(2)]
    if DEVICE == "cuda":
        host_x, host_y = [t.pin_memory() for t in host_x], [t.pin_memory() for t in host_y]
    bf16 = precision == "bf16"

    def step(i):
        x = host_x[i % 2].to(DEVICE, non_blocking=True)
        y = host_y[i % 2].to(DEVICE, non_blocking=True)
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=bf16):
            loss = loss_fn(forward(x), y)
        loss.backward()
        opt.step()
        return loss.item()

    started = time.perf_counter()
    if mode == "compile" and precision not in os.environ.get("COMPILE_PRECISIONS", "fp32 bf16").split():
        raise Skipped("compile left out for %s (COMPILE_PRECISIONS)" % precision)
    if mode == "compile":   # the first steps compile (forward and backward): bounded, timed apart
        signal.signal(signal.SIGALRM, on_alarm)
        signal.alarm(int(os.environ.get("COMPILE_LIMIT", "180")))
        try:
            step(0)
        finally:
            signal.alarm(0)
        sync()
        print("%s compile: %.1f s to compile and run the first step" % (config, time.perf_counter() - started),
              file=sys.stderr, flush=True)
    for i in range(warmup):
        step(i)
    sync()
    start = time.perf_counter()
    for i in range(steps):
        step(i)
    sync()
    return steps * batch / (time.perf_counter() - start)


def main():
    if len(sys.argv) < 5:
        sys.exit(__doc__)
    steps, warmup, modes = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3].split(",")
    torch.backends.cuda.matmul.allow_tf32 = True   # dtrain's fp32 mode: TF32 GEMMs and convolutions
    torch.backends.cudnn.allow_tf32 = True
    for config in sys.argv[4:]:
        for mode in modes:
            try:
                rate = measure(config, mode, steps, warmup)
            except Skipped as e:
                print("%s %s: %s" % (config, mode, e), file=sys.stderr)
                rate = 0.0
            except TooSlow:
                print("%s %s: skipped, not compiled within COMPILE_LIMIT seconds" % (config, mode), file=sys.stderr)
                rate = 0.0
            except Exception as e:   # one mode's failure (a compiler missing) leaves the others
                print("%s %s: failed: %s" % (config, mode, str(e).splitlines()[0] if str(e) else type(e).__name__),
                      file=sys.stderr)
                rate = 0.0
            print(config, mode, "%.1f" % rate, flush=True)
            if DEVICE == "cuda":
                torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
