#!/usr/bin/python3
"""seq_peer.py MODEL BATCH LEN THREADS STEPS [VOCAB] - PyTorch's side of bench/seq_vs_torch.sh.

Trains dtrain's language model (BERT's post-LN encoder with dropout 0.1 where dtrain puts it, the
pooler over [CLS], and for bert-* BertForPreTraining's heads with the decoder tied to the word
table, else a 2-class classifier; the same shapes as dtrain-train --model MODEL on synthetic-text,
parameters and all) on random
token ids with Adam, and prints "samples/s tokens/s" over STEPS steps after 3 untimed ones.
MODEL: transformer, bert-base, bert-large, or NAME:LAYERSxHIDDENxHEADS. Threads are set before
torch is imported (OMP_NUM_THREADS), as the bench's rules ask. PEER_DEVICE=cuda runs it on the GPU
(bench/gpu_vs_torch.sh): fp32 with TF32 allowed, as dtrain-train --device cuda, the clock read after
a synchronize. PEER_PRECISION=bf16 runs the step under bf16 autocast; PEER_ATTENTION=sdpa computes
attention with F.scaled_dot_product_attention (PyTorch's fused flash / memory-efficient kernels,
the padding mask and the dropout of the weights passed to it), as people run BERT today, instead of
the matmul-softmax-matmul written out.
"""
import os
import sys
import time

model_name, batch, length, threads, steps = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), \
    int(sys.argv[5])
vocab = int(sys.argv[6]) if len(sys.argv) > 6 else 30522
os.environ["OMP_NUM_THREADS"] = str(threads)

import torch  # noqa: E402  (after the thread count)
import torch.nn.functional as F  # noqa: E402
from torch import nn  # noqa: E402

torch.set_num_threads(threads)
DEVICE = os.environ.get("PEER_DEVICE", "cpu")
BF16 = os.environ.get("PEER_PRECISION", "fp32") == "bf16"
SDPA = os.environ.get("PEER_ATTENTION", "") == "sdpa"
torch.backends.cuda.matmul.allow_tf32 = True   # dtrain's fp32 on a GPU: TF32 GEMMs
torch.backends.cudnn.allow_tf32 = True


def sync():
    if DEVICE == "cuda":
        torch.cuda.synchronize()

DROPOUT = 0.1  # dtrain-train's default: after the embeddings, on the attention weights, after each block
SIZES = {"transformer": (6, 256, 4, None), "bert-base": (12, 768, 12, 512), "bert-large": (24, 1024, 16, 512)}


def size_of(name):
    base, _, custom = name.partition(":")
    layers, hidden, heads, positions = SIZES[base]
    if custom:
        layers, hidden, heads = (int(v) for v in custom.split("x"))
    return layers, hidden, heads, positions or length


class Layer(nn.Module):
    def __init__(self, hidden, heads):
        super().__init__()
        self.heads = heads
        self.qkv = nn.Linear(hidden, 3 * hidden)
        self.out = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden, eps=1e-12)
        self.ff1 = nn.Linear(hidden, 4 * hidden)
        self.ff2 = nn.Linear(4 * hidden, hidden)
        self.ln2 = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(DROPOUT)

    def forward(self, x, keep):
        n, t, h = x.shape
        q, k, v = (z.reshape(n, t, self.heads, h // self.heads).transpose(1, 2) for z in self.qkv(x).split(h, dim=-1))
        if SDPA:
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=keep, dropout_p=DROPOUT if self.training else 0.0)
        else:
            scores = (q @ k.transpose(-1, -2)) / (h // self.heads) ** 0.5
            weights = self.drop(torch.softmax(scores.masked_fill(~keep, float("-inf")), -1))   # as dtrain and BERT
            a = weights @ v
        a = a.transpose(1, 2).reshape(n, t, h)
        x = self.ln1(self.drop(self.out(a)) + x)
        return self.ln2(self.drop(self.ff2(F.gelu(self.ff1(x)))) + x)


class Classifier(nn.Module):
    def __init__(self, layers, hidden, heads, positions, classes=2, pretraining=False):
        super().__init__()
        self.pretraining = pretraining
        if pretraining:  # BertForPreTraining's heads, as dtrain builds them for bert-* on synthetic-text
            self.mlm_dense, self.mlm_ln = nn.Linear(hidden, hidden), nn.LayerNorm(hidden, eps=1e-12)
            self.mlm_bias = nn.Parameter(torch.zeros(vocab))
        self.word, self.pos, self.seg = nn.Embedding(vocab, hidden), nn.Embedding(positions, hidden), \
            nn.Embedding(2, hidden)
        self.ln = nn.LayerNorm(hidden, eps=1e-12)
        self.drop = nn.Dropout(DROPOUT)
        self.layers = nn.ModuleList(Layer(hidden, heads) for _ in range(layers))
        self.pool = nn.Linear(hidden, hidden)
        self.cls = nn.Linear(hidden, classes)

    def forward(self, ids):
        t = ids.shape[1]
        x = self.drop(self.ln(self.word(ids) + self.pos.weight[:t] + self.seg.weight[0]))
        keep = (ids != 0)[:, None, None, :]
        for layer in self.layers:
            x = layer(x, keep)
        nsp = self.cls(torch.tanh(self.pool(x[:, 0])))
        if not self.pretraining:
            return nsp
        mlm = F.linear(self.mlm_ln(F.gelu(self.mlm_dense(x))), self.word.weight, self.mlm_bias)  # tied decoder
        return nsp, mlm


def main():
    torch.manual_seed(1)
    pretraining = model_name.startswith("bert")
    model = Classifier(*size_of(model_name), pretraining=pretraining).to(DEVICE)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    ids = torch.randint(5, vocab, (batch, length))
    ids[:, 0] = 2
    labels = torch.randint(0, 2, (batch,))
    masked = torch.rand(batch, length) < 0.15  # 15% predicted, as dtrain's synthetic-text
    masked[:, 0] = False
    mlm_labels = torch.where(masked, ids, torch.full_like(ids, -100))
    ids = torch.where(masked, torch.full_like(ids, 4), ids)
    ids, labels, mlm_labels = ids.to(DEVICE), labels.to(DEVICE), mlm_labels.to(DEVICE)

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast(DEVICE, dtype=torch.bfloat16, enabled=BF16):
            if pretraining:
                nsp, mlm = model(ids)
                loss = F.cross_entropy(nsp, labels) + F.cross_entropy(mlm.reshape(-1, vocab), mlm_labels.reshape(-1))
            else:
                loss = F.cross_entropy(model(ids), labels)
        loss.backward()
        opt.step()
        return loss.item()   # read back every step, as dtrain-train logs it

    for _ in range(3):
        step()
    sync()
    start = time.perf_counter()
    for _ in range(steps):
        step()
    sync()
    rate = batch * steps / (time.perf_counter() - start)
    print(f"{rate:.2f} {rate * length:.0f}")


if __name__ == "__main__":
    main()
