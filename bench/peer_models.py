"""peer_models.py - the PyTorch peer's models: the exact shapes dtrain-train builds (mlp, lenet, cnn,
and torchvision's resnet18 with a 3x3 stride-1 one-channel stem for 28x28 inputs). Imported by
torch_peer.py and ddp_peer.py."""
import torch
from torch import nn


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


MODELS = {"mlp": mlp, "lenet": lenet, "cnn": cnn, "resnet18": resnet18}


def training_step(model, batch):
    """dtrain-train's step on a fixed synthetic 28x28 batch: forward, loss, backward, Adam (lr 0.01)."""
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    x = torch.randn(batch, 1, 28, 28)
    y = torch.randint(0, 10, (batch,))

    def step():
        optimizer.zero_grad()
        loss_fn(model(x), y).backward()
        optimizer.step()

    return step
