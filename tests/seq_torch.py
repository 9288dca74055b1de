#!/usr/bin/python3
"""seq_torch.py DIR N T VOCAB CLASSES LAYERS HIDDEN HEADS FFN [pretraining] - test_seq's PyTorch side.

Builds dtrain's language-model classifier (BERT's post-LN encoder, pooler over [CLS], classifier)
from the flat float32 parameters test_seq wrote in dtrain's order (DIR/params.f32), runs the token
batch (DIR/tokens.f32: per token its id, segment and masked-LM label; id 0 is padding) and labels (DIR/labels.f32),
and writes the loss and every parameter's gradient, in the same order, to DIR/grads.f32. With
"pretraining" the heads are BertForPreTraining's as dtrain lays them out: after the pooler, the
masked-LM transform (dense, GELU, layer norm), the decoder's bias (its weights the word table),
next sentence; the loss is next sentence plus the masked LM over the tokens with a label.
"""
import os
import sys

import torch
import torch.nn.functional as F

PAD = 0
EPS = 1e-12  # BERT's layer-norm epsilon


def main():
    d = sys.argv[1]
    n, T, vocab, classes, layers, hidden, heads, ffn = (int(a) for a in sys.argv[2:10])
    pretraining = len(sys.argv) > 10 and sys.argv[10] == "pretraining"
    flat = torch.from_file(os.path.join(d, "params.f32"), size=os.path.getsize(os.path.join(d, "params.f32")) // 4,
                           dtype=torch.float32).clone().requires_grad_(True)
    tok = torch.from_file(os.path.join(d, "tokens.f32"), size=n * T * 3, dtype=torch.float32).view(n, T, 3)
    ids, segs, mlm_labels = tok[..., 0].long(), tok[..., 1].long(), tok[..., 2].long()
    labels = torch.from_file(os.path.join(d, "labels.f32"), size=n, dtype=torch.float32).long()

    at = [0]

    def take(*shape):
        count = 1
        for s in shape:
            count *= s
        t = flat[at[0]:at[0] + count].view(*shape)
        at[0] += count
        return t

    H, dh = hidden, hidden // heads
    word, pos, seg = take(vocab, H), take(T, H), take(2, H)
    x = word[ids] + pos[:T] + seg[segs]
    x = F.layer_norm(x, (H,), take(H), take(H), EPS)
    keep = (ids != PAD)[:, None, None, :]  # [n, 1, 1, T]: keys that are real tokens
    for _ in range(layers):
        qkv = F.linear(x, take(3 * H, H), take(3 * H))
        q, k, v = (t.reshape(n, T, heads, dh).transpose(1, 2) for t in qkv.split(H, dim=-1))
        scores = (q @ k.transpose(-1, -2)) / dh ** 0.5
        probs = torch.softmax(scores.masked_fill(~keep, float("-inf")), dim=-1)
        a = (probs @ v).transpose(1, 2).reshape(n, T, H)
        x = F.layer_norm(F.linear(a, take(H, H), take(H)) + x, (H,), take(H), take(H), EPS)
        f = F.linear(F.gelu(F.linear(x, take(ffn, H), take(ffn))), take(H, ffn), take(H))
        x = F.layer_norm(f + x, (H,), take(H), take(H), EPS)
    pooled = torch.tanh(F.linear(x[:, 0], take(H, H), take(H)))
    if pretraining:
        t = F.layer_norm(F.gelu(F.linear(x, take(H, H), take(H))), (H,), take(H), take(H), EPS)
        mlm = F.linear(t, word, take(vocab))  # the decoder: the word table's weights
        nsp = F.linear(pooled, take(2, H), take(2))
        loss = F.cross_entropy(nsp, labels) + F.cross_entropy(mlm.reshape(-1, vocab), mlm_labels.reshape(-1),
                                                             ignore_index=-1)
    else:
        loss = F.cross_entropy(F.linear(pooled, take(classes, H), take(classes)), labels)
    assert at[0] == flat.numel(), f"{at[0]} parameters used, {flat.numel()} given"
    loss.backward()
    with open(os.path.join(d, "grads.f32"), "wb") as out:
        out.write(torch.tensor([loss.item()], dtype=torch.float32).numpy().tobytes())
        out.write(flat.grad.detach().numpy().astype("float32").tobytes())


if __name__ == "__main__":
    main()
