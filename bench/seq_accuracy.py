#!/usr/bin/python3
"""seq_accuracy.py DIR THREADS [LR] - PyTorch's side of bench/seq_accuracy.sh: the same training run.

DIR is what `dtrain-train --export-run DIR` wrote: the initial parameters in dtrain's order
(params.f32), the encoded text (train.ids, test.ids: int32 token ids, 0 padding; *.labels: uint8)
and meta.json (model, sizes, optimizer, batch, epochs, dropout). Builds the same model (BERT's
post-LN encoder with dropout after the embeddings, on the attention weights and after each
attention and feed-forward block; a tanh pooler over [CLS]; the classifier), loads dtrain's
initial weights into it, trains with Adam (betas 0.9, 0.999, eps 1e-8, as dtrain) on batches in
an order of its own, and prints "steps test_accuracy". Threads are set before torch is imported.
"""
import json
import os
import sys

directory, threads = sys.argv[1], int(sys.argv[2])
os.environ["OMP_NUM_THREADS"] = str(threads)

import torch  # noqa: E402  (after the thread count)
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(threads)
SIZES = {"transformer": (6, 256, 4), "bert-base": (12, 768, 12), "bert-large": (24, 1024, 16)}


class Layer(nn.Module):
    def __init__(self, hidden, heads, dropout):
        super().__init__()
        self.heads = heads
        self.qkv, self.out = nn.Linear(hidden, 3 * hidden), nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ff1, self.ff2 = nn.Linear(hidden, 4 * hidden), nn.Linear(4 * hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(dropout)

    def forward(self, x, keep):
        n, t, h = x.shape
        q, k, v = (z.reshape(n, t, self.heads, h // self.heads).transpose(1, 2) for z in self.qkv(x).split(h, dim=-1))
        scores = (q @ k.transpose(-1, -2)) / (h // self.heads) ** 0.5
        weights = self.drop(torch.softmax(scores.masked_fill(~keep, float("-inf")), -1))
        a = (weights @ v).transpose(1, 2).reshape(n, t, h)
        x = self.ln1(self.drop(self.out(a)) + x)
        return self.ln2(self.drop(self.ff2(F.gelu(self.ff1(x)))) + x)


class Classifier(nn.Module):
    def __init__(self, vocab, length, classes, layers, hidden, heads, dropout):
        super().__init__()
        self.word, self.pos, self.seg = nn.Embedding(vocab, hidden), nn.Embedding(length, hidden), \
            nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(dropout)
        self.layers = nn.ModuleList(Layer(hidden, heads, dropout) for _ in range(layers))
        self.pool, self.cls = nn.Linear(hidden, hidden), nn.Linear(hidden, classes)

    def forward(self, ids):
        x = self.drop(self.ln(self.word(ids) + self.pos.weight[:ids.shape[1]] + self.seg.weight[0]))
        keep = (ids != 0)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, keep)
        return self.cls(torch.tanh(self.pool(x[:, 0])))

    def dtrain_order(self):
        """The parameters in the order dtrain lays them out (tests/seq_torch.py reads the same)."""
        yield from (self.word.weight, self.pos.weight, self.seg.weight, self.ln.weight, self.ln.bias)
        for layer in self.layers:
            for module in (layer.qkv, layer.out, layer.ln1, layer.ff1, layer.ff2, layer.ln2):
                yield from (module.weight, module.bias)
        yield from (self.pool.weight, self.pool.bias, self.cls.weight, self.cls.bias)


def load(name, dtype, shape):
    return torch.from_file(os.path.join(directory, name), size=shape[0] * shape[1], dtype=dtype).view(*shape)


def main():
    with open(os.path.join(directory, "meta.json")) as f:
        meta = json.load(f)
    base, _, custom = meta["model"].partition(":")
    layers, hidden, heads = (int(v) for v in custom.split("x")) if custom else SIZES[base]
    length, lr = meta["length"], float(sys.argv[3]) if len(sys.argv) > 3 else meta["lr"]
    model = Classifier(meta["vocab"], length, meta["classes"], layers, hidden, heads, meta["dropout"])
    flat = torch.from_file(os.path.join(directory, "params.f32"), size=meta["params"], dtype=torch.float32)
    at = 0
    with torch.no_grad():
        for p in model.dtrain_order():
            p.copy_(flat[at:at + p.numel()].view_as(p))
            at += p.numel()
    assert at == meta["params"], f"{at} parameters laid out, {meta['params']} exported"
    train_ids = load("train.ids", torch.int32, (meta["train"], length)).long()
    train_labels = load("train.labels", torch.uint8, (meta["train"], 1)).view(-1).long()
    test_ids = load("test.ids", torch.int32, (meta["test"], length)).long()
    test_labels = load("test.labels", torch.uint8, (meta["test"], 1)).view(-1).long()

    opt = torch.optim.Adam(model.parameters(), lr=lr, betas=(0.9, 0.999), eps=1e-8,
                           weight_decay=meta["weight_decay"])
    generator = torch.Generator().manual_seed(meta["seed"])
    batch, steps = meta["batch"], 0
    for _ in range(meta["epochs"]):
        model.train()
        order = torch.randperm(meta["train"], generator=generator)
        for first in range(0, meta["train"], batch):
            picked = order[first:first + batch]
            opt.zero_grad(set_to_none=True)
            F.cross_entropy(model(train_ids[picked]), train_labels[picked]).backward()
            opt.step()
            steps += 1
    model.eval()
    correct = 0
    with torch.no_grad():
        for first in range(0, meta["test"], 256):
            correct += (model(test_ids[first:first + 256]).argmax(-1) == test_labels[first:first + 256]).sum().item()
    print(f"{steps} {correct / meta['test']:.5f}")


if __name__ == "__main__":
    main()
