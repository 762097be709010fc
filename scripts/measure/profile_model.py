#!/usr/bin/env python3
"""Writes a small real PyTorch profile (Chrome trace JSON, record_shapes=True) for the xpusim
importer: a conv stem and two transformer layers, one with fused attention
(scaled_dot_product_attention) and one unfused (matmul, softmax, matmul), in fp16 on the GPU.
One profiled forward after warm-up.
Usage: python3 profile_model.py OUT.json"""
import sys

import torch
import torch.nn.functional as F
from torch.profiler import ProfilerActivity, profile


class Block(torch.nn.Module):
    def __init__(self, d, heads, fused):
        super().__init__()
        self.heads, self.fused = heads, fused
        self.qkv = torch.nn.Linear(d, 3 * d)
        self.proj = torch.nn.Linear(d, d)
        self.ln1 = torch.nn.LayerNorm(d)
        self.ln2 = torch.nn.LayerNorm(d)
        self.up = torch.nn.Linear(d, 4 * d)
        self.down = torch.nn.Linear(4 * d, d)

    def forward(self, x):
        b, s, d = x.shape
        h = self.ln1(x)
        q, k, v = self.qkv(h).view(b, s, 3, self.heads, d // self.heads).permute(2, 0, 3, 1, 4)
        if self.fused:
            a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        else:
            scores = torch.matmul(q, k.transpose(-1, -2)) * (d // self.heads) ** -0.5
            a = torch.matmul(torch.softmax(scores, dim=-1), v)
        x = x + self.proj(a.transpose(1, 2).reshape(b, s, d))
        return x + self.down(F.gelu(self.up(self.ln2(x))))


class Model(torch.nn.Module):
    def __init__(self, d=256, heads=4):
        super().__init__()
        self.stem = torch.nn.Conv2d(3, d, kernel_size=4, stride=4)  # 64x64 image -> 16x16 patches
        self.blocks = torch.nn.ModuleList([Block(d, heads, True), Block(d, heads, False)])
        self.head = torch.nn.Linear(d, 1000)

    def forward(self, img):
        x = self.stem(img).flatten(2).transpose(1, 2)  # [b, 256 tokens, d]
        for blk in self.blocks:
            x = blk(x)
        y = torch.bmm(x, x.transpose(1, 2))  # a batched matmul, so bmm appears
        return self.head(x.mean(dim=1)), y


def main(out):
    dev = torch.device("cuda")
    model = Model().to(dev).half().eval()
    img = torch.randn(2, 3, 64, 64, device=dev, dtype=torch.float16)
    with torch.no_grad():
        for _ in range(3):
            model(img)
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA], record_shapes=True) as prof:
            model(img)
            torch.cuda.synchronize()
    prof.export_chrome_trace(out)
    print(prof.key_averages().table(sort_by="cuda_time_total", row_limit=25))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "profile.json")
