#!/usr/bin/env python3
"""Logistic regression for a tabular site under ptopofl.trainer/v1.

It computes what ptopofl's in-process site does under the default preset with
local_solver "gd", in float64, so that a campaign run through this trainer
matches the in-process one to rounding:

  data         dataset.ReadCSV / readSplit: a CSV file with a header naming a
               label column ("y", or hyper-parameter label_column) holding 0/1
  scaling      method.PrepareSite / learn.FitStandardScaler: the training
               split's mean and population standard deviation (a deviation
               below 10 * machine epsilon counts as 1), applied to both splits
  init         learn.InitialParams: numpy RandomState(seed mod 2^32).randn * 0.01
               for the coefficients, intercept 0 (learn.SiteInput.initial);
               in round 1 each site's train task starts from its own such
               model (seeded by the task's seed), as the in-process site
               does, rather than from the campaign's shared initial model
  train        learn.GradientDescent with Logistic.MeanGradient: `steps` full-
               batch steps of size `lr` on X^T(s - y)/n + w/(C n) and mean(s - y),
               s the sigmoid of the logit clipped to [-30, 30]; FedProx
               (learn updateFedProx) adds mu (theta - theta_received) to every
               parameter's gradient
  loss         learn.Logistic.Objective: sum of log-losses + |w|^2 / (2C)
  evaluate     method.EvaluateSite: ROC AUC (mid-ranks) and accuracy (score >= 0.5)

The model is two F64 tensors, "coef" [features] and "intercept" [1]: in name
order they flatten to learn's vector (coefficients, then intercept).
Parquet site files need pyarrow, which this example does not use: they are
refused with exit 65, kind "unsupported_format".
"""

import csv
import math

import numpy
import torch

from trainer_protocol import (bad_data, expect, hyper, progress, read_safetensors, roc_auc, run,
                              write_result, write_safetensors)

F64 = torch.float64
LOGIT_CLIP = 30.0  # learn.LogitClip
INIT_SCALE = 0.01  # learn.DefaultSiteConfig().InitScale
# Methods whose site update is learn's fitLocal (under local_solver gd: plain
# gradient descent from the model received). pTopoFL's in-process update also
# weights rows by the topology sample weights, which need the site's
# descriptor; task.json does not carry it, so here it trains unweighted.
PLAIN_METHODS = {"fedavg", "ptopofl", "local", "median", "trimmed-mean", "trimmed_mean", "krum", "foolsgold", "norm-clip"}


def number(cell):
    """A cell as dataset.parseCell reads it, or None when it is no finite number."""
    try:
        v = float(cell.strip())
    except ValueError:
        return None
    return v if math.isfinite(v) else None


def parses(cell):
    try:
        float(cell)
        return True
    except ValueError:
        return False


def read_table(path, label):
    """(feature names, X, y) of one split, checked as dataset.readSplit checks it."""
    if path.lower().endswith(".parquet"):
        raise bad_data("unsupported_format", f"{path}: this example trainer reads CSV only, not parquet")
    try:
        with open(path, newline="") as f:
            rows = [(n, r) for n, r in enumerate(csv.reader(f, skipinitialspace=True), 1) if r]
    except (OSError, UnicodeDecodeError, csv.Error) as e:
        raise bad_data("unreadable", f"{path}: cannot read: {type(e).__name__}")
    if not rows:
        raise bad_data("empty", f"{path}: empty file: no data rows")
    header = [c.lstrip("\ufeff").strip() if j == 0 else c.strip() for j, c in enumerate(rows[0][1])]
    if any(parses(c) for c in header):  # dataset.isHeader: a header has no number
        raise bad_data("no_label", f"{path}: no header line, so no label column {label!r}")
    if header.count(label) != 1:
        raise bad_data("no_label", f"{path}:1: want exactly one label column {label!r}")
    li = header.index(label)
    names = header[:li] + header[li + 1:]
    if not names:
        raise bad_data("no_features", f"{path}:1: no feature columns besides the label column")
    x, y = [], []
    for line, rec in rows[1:]:
        if len(rec) != len(header):
            raise bad_data("ragged", f"{path}:{line}: row has {len(rec)} cells, want {len(header)} as on the first line")
        vals = [number(c) for c in rec]
        for j, v in enumerate(vals):
            if v is None:
                raise bad_data("not_a_number", f"{path}:{line}: cell {j + 1}: not a finite number")
        if vals[li] not in (0.0, 1.0):
            raise bad_data("bad_label", f"{path}:{line}: label column {label!r}: not 0 or 1")
        y.append(vals[li])
        x.append(vals[:li] + vals[li + 1:])
    if not x:
        raise bad_data("empty", f"{path}: no data rows after the header")
    return names, torch.tensor(x, dtype=F64), torch.tensor(y, dtype=F64)


def load_site(task, need_test):
    """The standardised training split and, if need_test, test split."""
    label = hyper(task, "label_column", "y")
    names, x, y = read_table(task["train_data"][0], label)
    if y.min() == y.max():
        raise bad_data("single_class", f"{task['train_data'][0]}: the training split holds a single class")
    mean = x.mean(0)
    sd = ((x - mean) ** 2).mean(0).sqrt()
    sd[sd < 10 * 2.0 ** -52] = 1.0
    site = {"names": names, "x": (x - mean) / sd, "y": y}
    if need_test:
        tnames, tx, ty = read_table(task["test_data"][0], label)
        if tnames != names:
            raise bad_data("columns", f"{task['test_data'][0]}: feature columns differ from the training split's")
        site["tx"], site["ty"] = (tx - mean) / sd, ty
    return site


def read_model(task, features):
    m = read_safetensors(task["model_in"])
    return torch.cat([expect(m, "coef", [features], F64), expect(m, "intercept", [1], F64)])


def write_model(task, theta):
    write_safetensors(task["model_out"], {"coef": theta[:-1], "intercept": theta[-1:]})


def scores(theta, x):
    """learn.Logistic.Score: sigmoid of the logit clipped to [-30, 30]."""
    z = (x @ theta[:-1] + theta[-1]).clamp(-LOGIT_CLIP, LOGIT_CLIP)
    return 1 / (1 + torch.exp(-z))


def objective(theta, x, y, c):
    """learn.Logistic.Objective without the gradient."""
    z = x @ theta[:-1] + theta[-1]
    softplus = torch.where(z > 0, z + torch.log1p(torch.exp(-z)), torch.log1p(torch.exp(z)))
    return (softplus - y * z).sum() + (theta[:-1] ** 2).sum() / (2 * c)


def seeded(seed, nf):
    """learn.InitialParams: numpy RandomState(seed mod 2^32) normals * 0.01, intercept 0."""
    coef = numpy.random.RandomState(seed % 2**32).randn(nf) * INIT_SCALE
    return torch.cat([torch.tensor(coef, dtype=F64), torch.zeros(1, dtype=F64)])


def init(task):
    site = load_site(task, need_test=False)
    write_model(task, seeded(task["seed"], site["x"].shape[1]))
    write_result(task, len(site["y"]), {})


def train(task):
    method = task["method"]
    if method not in PLAIN_METHODS and method != "fedprox":
        raise bad_data("unsupported_method", f"this trainer does not do method {method!r}")
    if hyper(task, "dp", "off") != "off":
        raise bad_data("unsupported_dp", "this trainer does not train under differential privacy")
    if method != "fedprox" and hyper(task, "local_solver", "gd") != "gd":
        raise bad_data("unsupported_solver", "this trainer runs local_solver gd only")
    lr, steps, c = float(hyper(task, "lr", 0.05)), int(hyper(task, "steps", 30)), float(hyper(task, "c", 1.0))
    mu = float(hyper(task, "mu", 0.1)) if method == "fedprox" else 0.0
    site = load_site(task, need_test=False)
    x, y = site["x"], site["y"]
    n = len(y)
    theta = read_model(task, x.shape[1])
    if task["round"] == 1:
        # Round 1 as the in-process site starts it under gradient descent:
        # from its own seeded model (learn.SiteInput.initial, seeded by the
        # task's seed), not from the campaign's shared initial model.
        theta = seeded(task["seed"], x.shape[1])
    anchor = theta.clone()
    for step in range(steps):
        r = scores(theta, x) - y
        grad = torch.cat([x.T @ r / n + theta[:-1] / (c * n), (r.sum() / n).reshape(1)])
        if mu:
            grad += mu * (theta - anchor)
        theta = theta - lr * grad
        progress(step=step + 1, of=steps)
    write_model(task, theta)
    write_result(task, n, {"loss": objective(theta, x, y, c).item()})


def evaluate(task):
    site = load_site(task, need_test=True)
    theta = read_model(task, site["x"].shape[1])
    s, ty = scores(theta, site["tx"]), site["ty"]
    accuracy = ((s >= 0.5).to(F64) == ty).to(F64).mean().item()
    write_result(task, len(ty), {"auc": roc_auc(s.tolist(), ty.tolist()), "accuracy": accuracy})


if __name__ == "__main__":
    run({"init": init, "train": train, "evaluate": evaluate})
