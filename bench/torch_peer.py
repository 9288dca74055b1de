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
from torch import nn  # noqa: E402

torch.set_num_threads(threads)
torch.manual_seed(1)


def lenet():
    return nn.Sequential(nn.Conv2d(1, 6, 5), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(6, 16, 5), nn.ReLU(),
                         nn.MaxPool2d(2), nn.Flatten(), nn.Linear(256, 120), nn.ReLU(), nn.Linear(120, 84),
                         nn.ReLU(), nn.Linear(84, 10))


def cnn():
    return nn.Sequential(nn.Conv2d(1, 32, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(32, 64, 3, padding=1),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(3136, 128), nn.ReLU(), nn.Linear(128, 10))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 256), nn.ReLU(),
                         nn.Linear(256, 10))


class Block(nn.Module):
    """torchvision's BasicBlock."""

    def __init__(self, c_in, planes, stride):
        super().__init__()
        self.conv1 = nn.Conv2d(c_in, planes, 3, stride, 1, bias=False)
        self.bn1 = nn.BatchNorm2d(planes)
        self.conv2 = nn.Conv2d(planes, planes, 3, 1, 1, bias=False)
        self.bn2 = nn.BatchNorm2d(planes)
        self.down = None
        if stride != 1 or c_in != planes:
            self.down = nn.Sequential(nn.Conv2d(c_in, planes, 1, stride, bias=False), nn.BatchNorm2d(planes))

    def forward(self, x):
        out = torch.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        return torch.relu(out + (self.down(x) if self.down is not None else x))


def resnet18():
    """torchvision's resnet18 with a 3x3 stride-1 one-channel stem and no max pool (28x28 inputs)."""
    layers, c = [nn.Conv2d(1, 64, 3, 1, 1, bias=False), nn.BatchNorm2d(64), nn.ReLU()], 64
    for planes, stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        layers += [Block(c, planes, stride), Block(planes, planes, 1)]
        c = planes
    return nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(512, 10))


model = {"mlp": mlp, "lenet": lenet, "cnn": cnn, "resnet18": resnet18}[model_name]()
optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
loss_fn = nn.CrossEntropyLoss()
x = torch.randn(batch, 1, 28, 28)
y = torch.randint(0, 10, (batch,))


def step():
    optimizer.zero_grad()
    loss_fn(model(x), y).backward()
    optimizer.step()


for _ in range(3):  # warm up allocators and oneDNN's primitive caches (dtrain's side skips 3 too)
    step()
start = time.perf_counter()
for _ in range(steps):
    step()
print(model_name, f"{steps * batch / (time.perf_counter() - start):.2f}")
