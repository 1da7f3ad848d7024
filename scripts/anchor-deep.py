#!/usr/bin/python3
"""PyTorch anchor of issue 13 for `make bench-deep-anchor`: FedAvg on an image
federation written by `bin/gendata fashion-mnist` (its per-site IDX files, so
this script and our campaigns see the same images), the CNN conv 5x5x16 ->
pool -> conv 5x5x32 -> pool -> dense 10 (same padding, as our deep-small), 1 local epoch, batch 32, SGD 0.05
with momentum 0.9 (a fresh optimiser per round, as our sites), 20 rounds,
2 threads, in memory, no durability.

Each round it prints two mean site top-1 accuracies on each site's test split:
  global = the aggregate FedAvg sends back, scored on every site (what our
           campaigns report as final_acc);
  local  = each site's own model right after its local update, before
           aggregation.
and the wall time of the round (training + aggregation, evaluation excluded)
and of its evaluation (both scores on every site's test split: the work our
durable round does besides training and aggregating). The last line is one
JSON object with both curves' final values and both times per round. Only a benchmark reference: never part of the product."""
import argparse
import json
import os
import time

# Idle OpenMP threads sleep instead of spinning: on this shared 2-core
# machine spinning threads make a 2-thread training step 20x slower
# (~800 ms instead of ~37 ms for batch 32).
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")

import numpy as np  # noqa: E402
import torch  # noqa: E402
from torch import nn


def read_idx(path):
    with open(path, "rb") as f:
        b = f.read()
    if b[0] != 0 or b[1] != 0 or b[2] != 0x08:
        raise SystemExit(f"anchor-deep: {path}: not an unsigned-byte IDX file")
    nd = b[3]
    dims = [int.from_bytes(b[4 + 4 * i:8 + 4 * i], "big") for i in range(nd)]
    return np.frombuffer(b[4 + 4 * nd:], dtype=np.uint8).reshape(dims)


def load_site(fed, name, split):
    x = read_idx(os.path.join(fed, f"{name}_{split}-images.idx")).astype(np.float32) / 255.0
    y = read_idx(os.path.join(fed, f"{name}_{split}-labels.idx")).astype(np.int64)
    if x.ndim == 3:
        x = x[:, None, :, :]
    else:
        x = np.transpose(x, (0, 3, 1, 2))
    return torch.from_numpy(np.ascontiguousarray(x)), torch.from_numpy(y)


def make_net(classes):
    # "Same" padding, as the deep-small preset's cnn (nn.CNN): 28 -> 14 -> 7,
    # 28,938 parameters at 10 classes.
    return nn.Sequential(
        nn.Conv2d(1, 16, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Conv2d(16, 32, 5, padding=2), nn.ReLU(), nn.MaxPool2d(2),
        nn.Flatten(), nn.Linear(7 * 7 * 32, classes))


def accuracy(net, x, y):
    with torch.no_grad():
        return (net(x).argmax(1) == y).float().mean().item()


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--federation", required=True)
    p.add_argument("--rounds", type=int, default=20)
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--momentum", type=float, default=0.9)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--threads", type=int, default=2)
    a = p.parse_args()

    torch.set_num_threads(a.threads)
    torch.manual_seed(a.seed)
    man = json.load(open(os.path.join(a.federation, "federation.json")))
    classes = man.get("classes", 10)
    sites = [s["name"] for s in man["sites"]]
    train = [load_site(a.federation, s, "train") for s in sites]
    test = [load_site(a.federation, s, "test") for s in sites]
    n = [len(t[1]) for t in train]
    if train[0][0].shape[1:] != (1, 28, 28):
        raise SystemExit(f"anchor-deep: images are {tuple(train[0][0].shape[1:])}, the anchor's CNN wants 1x28x28")

    glob = make_net(classes)
    net = make_net(classes)
    loss_fn = nn.CrossEntropyLoss()
    times, eval_times, g_curve, l_curve = [], [], [], []
    for r in range(1, a.rounds + 1):
        t0 = time.perf_counter()
        ev = 0.0
        states, local_acc = [], []
        for k, (x, y) in enumerate(train):
            net.load_state_dict(glob.state_dict())
            opt = torch.optim.SGD(net.parameters(), lr=a.lr, momentum=a.momentum)
            for _ in range(a.epochs):
                perm = torch.randperm(len(y))
                for i in range(0, len(y), a.batch):
                    idx = perm[i:i + a.batch]
                    opt.zero_grad()
                    loss_fn(net(x[idx]), y[idx]).backward()
                    opt.step()
            te = time.perf_counter()
            local_acc.append(accuracy(net, *test[k]))
            ev += time.perf_counter() - te
            t0 += time.perf_counter() - te  # evaluation is not part of the round's time
            states.append({key: v.detach().clone() for key, v in net.state_dict().items()})
        tot = float(sum(n))
        glob.load_state_dict({key: sum(s[key] * (n[k] / tot) for k, s in enumerate(states)) for key in states[0]})
        times.append(time.perf_counter() - t0)
        te = time.perf_counter()
        g = float(np.mean([accuracy(glob, *t) for t in test]))
        eval_times.append(ev + time.perf_counter() - te)
        l = float(np.mean(local_acc))
        g_curve.append(g)
        l_curve.append(l)
        print(f"round {r:3d}  global {g:.4f}  local {l:.4f}  {times[-1]:.2f} s  evaluation {eval_times[-1]:.2f} s", flush=True)
    print(json.dumps({
        "federation": a.federation, "alpha": man.get("alpha"), "sites": len(sites), "seed": a.seed,
        "rounds": a.rounds, "threads": a.threads, "torch": torch.__version__,
        "params": sum(q.numel() for q in glob.parameters()),
        "final_acc_global": g_curve[-1], "final_acc_local": l_curve[-1],
        "acc_global": g_curve, "acc_local": l_curve,
        "seconds_per_round": sum(times) / len(times), "seconds_total": sum(times),
        "eval_seconds_per_round": sum(eval_times) / len(eval_times),
    }))


if __name__ == "__main__":
    main()
