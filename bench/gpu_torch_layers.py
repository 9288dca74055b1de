"""gpu_torch_layers.py - where PyTorch's ResNet step spends its GPU time, by kind of operation,
beside dtrain-train's --profile-out of the same step (bench/gpu_device_run.sh prints both).

The step is gpu_peer.py's (torchvision's ResNet, Adam, fp32 with TF32 or bf16 autocast, cuDNN's
timed algorithms); torch.profiler records STEPS steps after WARMUP, and each CUDA kernel's time is
put under the kind its name says: convolution (cuDNN's and cuBLAS's kernels under a conv), batch
norm, elementwise (ReLU, add, copies), the optimizer, and the rest.

usage: gpu_torch_layers.py MODEL HxWxC BATCH fp32|bf16 [STEPS] [WARMUP]
prints one line per kind: KIND MS_PER_STEP SHARE
"""
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, __file__.rsplit("/", 1)[0])
from gpu_peer import build  # noqa: E402  (the same network as the benchmark's)


def kind_of(op):
    name = op.lower()
    if "conv" in name or "wgrad" in name or "dgrad" in name or "implicit" in name or "gemm" in name:
        return "convolution and linear"
    if "batch_norm" in name or "bn_" in name or "batchnorm" in name:
        return "batch norm"
    if "adam" in name or "multi_tensor" in name or "foreach" in name:
        return "optimizer"
    if "elementwise" in name or "relu" in name or "threshold" in name or "add" in name or "copy" in name:
        return "elementwise"
    return "other"


def main():
    model, shape, batch, precision = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
    steps = int(sys.argv[5]) if len(sys.argv) > 5 else 5
    warmup = int(sys.argv[6]) if len(sys.argv) > 6 else 5
    h, w, c = (int(v) for v in shape.split("x"))
    torch.backends.cudnn.benchmark = True
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    net = build(model, c, h)
    opt = torch.optim.Adam(net.parameters(), lr=0.001)
    x = torch.rand(batch, c, h, w, device="cuda")
    y = torch.randint(0, 10, (batch,), device="cuda")

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16, enabled=precision == "bf16"):
            loss = torch.nn.functional.cross_entropy(net(x), y)
        loss.backward()
        opt.step()

    for _ in range(warmup):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    kinds = {}
    for event in prof.key_averages():
        us = getattr(event, "self_device_time_total", None)
        if us is None:
            us = event.self_cuda_time_total
        if us > 0:
            kind = kind_of(event.key)
            kinds[kind] = kinds.get(kind, 0.0) + us / 1000.0 / steps
    total = sum(kinds.values())
    print(f"PyTorch {torch.__version__}, {model} {shape} batch {batch} {precision}: {total:.2f} ms of kernels a step")
    for kind, ms in sorted(kinds.items(), key=lambda kv: -kv[1]):
        print(f"  {kind:24s} {ms:8.2f} ms  {100 * ms / total:5.1f}%")


if __name__ == "__main__":
    main()
