#!/usr/bin/python3
"""PyTorch yardstick for `make bench-deep`: times full training steps of the
same networks as `bin/nn bench` (LEAF ConvNet-2, MLP 784-256-K, and the
GroupNorm ResNet on 32x32x3) with the same batch, random inputs and SGD with
momentum 0.9, on 2 threads, and prints one JSON object with the same keys.
Only a benchmark reference: never part of the product."""
import argparse
import json
import statistics
import time

import torch
from torch import nn

p = argparse.ArgumentParser()
p.add_argument("--model", required=True, choices=["convnet2", "mlp", "resnet"])
p.add_argument("--width", type=int, default=16)
p.add_argument("--depth", type=int, default=2)
p.add_argument("--classes", type=int, default=62)
p.add_argument("--batch", type=int, default=64)
p.add_argument("--steps", type=int, default=10)
p.add_argument("--warmup", type=int, default=2)
p.add_argument("--threads", type=int, default=2)
a = p.parse_args()

torch.set_num_threads(a.threads)
torch.manual_seed(1)
if a.model == "convnet2":
    net = nn.Sequential(
        nn.Conv2d(1, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(32, 64, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 64, 2048), nn.ReLU(), nn.Linear(2048, a.classes))
elif a.model == "mlp":
    net = nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, a.classes))
else:
    # bin/nn's ResNet: 3x3 stem, four stages of basic blocks (GroupNorm, 8
    # groups), 1x1 projection shortcuts, global average pooling.
    groups = min(8, a.width)

    class Block(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.body = nn.Sequential(
                nn.Conv2d(cin, cout, 3, stride, 1, bias=False), nn.GroupNorm(groups, cout), nn.ReLU(),
                nn.Conv2d(cout, cout, 3, 1, 1, bias=False), nn.GroupNorm(groups, cout))
            self.short = nn.Sequential()
            if stride != 1 or cin != cout:
                self.short = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.GroupNorm(groups, cout))

        def forward(self, x):
            return torch.relu(self.body(x) + self.short(x))

    layers = [nn.Conv2d(3, a.width, 3, 1, 1, bias=False), nn.GroupNorm(groups, a.width), nn.ReLU()]
    cin = a.width
    for stage in range(4):
        for block in range(a.depth):
            cout = a.width << stage
            layers.append(Block(cin, cout, 2 if stage > 0 and block == 0 else 1))
            cin = cout
    net = nn.Sequential(*layers, nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, a.classes))
opt = torch.optim.SGD(net.parameters(), lr=0.01, momentum=0.9)
loss_fn = nn.CrossEntropyLoss()
x = torch.rand(a.batch, 3, 32, 32) if a.model == "resnet" else torch.rand(a.batch, 1, 28, 28)
y = torch.randint(0, a.classes, (a.batch,))


def step():
    opt.zero_grad()
    loss = loss_fn(net(x), y)
    loss.backward()
    opt.step()


for _ in range(a.warmup):
    step()
times = []
for _ in range(a.steps):
    t0 = time.perf_counter()
    step()
    times.append((time.perf_counter() - t0) * 1e3)
print(json.dumps({
    "model": a.model, "params": sum(q.numel() for q in net.parameters()),
    "classes": a.classes, "batch": a.batch, "steps": a.steps, "threads": a.threads,
    "torch": torch.__version__,
    "step_ms_min": min(times), "step_ms_median": statistics.median(times),
}))
