#!/usr/bin/env python3
"""Logistic regression for a tabular site under ptopofl.trainer/v1, in numpy.

It needs Python's standard library and numpy only (Debian's python3-numpy),
and serves both of the protocol's modes (trainer_protocol.run): per task, or
as one long-lived process per site that keeps the site's data loaded between
tasks. It computes what ptopofl's in-process site does under the default
preset with local_solver "gd", in float64, so that a campaign run through it
matches the in-process one to rounding (internal/workers'
TestPythonTrainerMatchesInProcess checks it in both modes):

  data         dataset.ReadCSV / readSplit: a CSV file with a header naming
               the site's label column (task.json's "label", "y" by default)
               holding 0/1
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
refused with exit 65, kind "unsupported_format". tabular.py is the same
trainer on torch, reading the site's files with this module.
"""

import csv
import math

import numpy

from trainer_protocol import (bad_data, cached, expect, hyper, progress, read_safetensors, roc_auc, run,
                              write_result, write_safetensors)

LOGIT_CLIP = 30.0  # learn.LogitClip
INIT_SCALE = 0.01  # learn.DefaultSiteConfig().InitScale
# Methods whose site update is learn's fitLocal (under local_solver gd: plain
# gradient descent from the model received). pTopoFL's in-process update also
# weights rows by the topology sample weights, which need the site's
# descriptor; task.json does not carry it, so here it trains unweighted.
PLAIN_METHODS = {"fedavg", "ptopofl", "local", "median", "trimmed-mean", "trimmed_mean", "krum", "foolsgold", "norm-clip"}

SITE = {}  # the site's data, kept between tasks in serve mode (cached)


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
    return names, numpy.array(x, dtype=numpy.float64), numpy.array(y, dtype=numpy.float64)


def load_site(task):
    """The site's standardised splits {"names", "x", "y", "tx", "ty"} (float64)."""
    label = task.get("label") or "y"

    def load():
        names, x, y = read_table(task["train_data"][0], label)
        if y.min() == y.max():
            raise bad_data("single_class", f"{task['train_data'][0]}: the training split holds a single class")
        mean = x.mean(0)
        sd = numpy.sqrt(((x - mean) ** 2).mean(0))
        sd[sd < 10 * 2.0 ** -52] = 1.0
        tnames, tx, ty = read_table(task["test_data"][0], label)
        if tnames != names:
            raise bad_data("columns", f"{task['test_data'][0]}: feature columns differ from the training split's")
        return {"names": names, "x": (x - mean) / sd, "y": y, "tx": (tx - mean) / sd, "ty": ty}

    return cached(SITE, task["train_data"] + task["test_data"], label, load)


def read_model(task, features):
    m = read_safetensors(task["model_in"])
    return numpy.concatenate([expect(m, "coef", [features]), expect(m, "intercept", [1])])


def write_model(task, theta):
    write_safetensors(task["model_out"], {"coef": theta[:-1], "intercept": theta[-1:]})


def scores(theta, x):
    """learn.Logistic.Score: sigmoid of the logit clipped to [-30, 30]."""
    z = numpy.clip(x @ theta[:-1] + theta[-1], -LOGIT_CLIP, LOGIT_CLIP)
    return 1 / (1 + numpy.exp(-z))


def objective(theta, x, y, c):
    """learn.Logistic.Objective without the gradient."""
    z = x @ theta[:-1] + theta[-1]
    softplus = numpy.where(z > 0, z + numpy.log1p(numpy.exp(-numpy.abs(z))), numpy.log1p(numpy.exp(-numpy.abs(z))))
    return float((softplus - y * z).sum() + (theta[:-1] ** 2).sum() / (2 * c))


def seeded(seed, nf):
    """learn.InitialParams: numpy RandomState(seed mod 2^32) normals * 0.01, intercept 0."""
    coef = numpy.random.RandomState(seed % 2**32).randn(nf) * INIT_SCALE
    return numpy.concatenate([coef, numpy.zeros(1)])


def init(task):
    site = load_site(task)
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
    site = load_site(task)
    x, y = site["x"], site["y"]
    n = len(y)
    theta = read_model(task, x.shape[1])
    if task["round"] == 1:
        # Round 1 as the in-process site starts it under gradient descent:
        # from its own seeded model (learn.SiteInput.initial, seeded by the
        # task's seed), not from the campaign's shared initial model.
        theta = seeded(task["seed"], x.shape[1])
    anchor = theta.copy()
    for step in range(steps):
        r = scores(theta, x) - y
        grad = numpy.concatenate([x.T @ r / n + theta[:-1] / (c * n), [r.sum() / n]])
        if mu:
            grad += mu * (theta - anchor)
        theta = theta - lr * grad
    progress(steps=steps)
    write_model(task, theta)
    write_result(task, n, {"loss": objective(theta, x, y, c)})


def evaluate(task):
    site = load_site(task)
    theta = read_model(task, site["x"].shape[1])
    s, ty = scores(theta, site["tx"]), site["ty"]
    accuracy = float(((s >= 0.5) == (ty == 1)).mean())
    write_result(task, len(ty), {"auc": roc_auc(s.tolist(), ty.tolist()), "accuracy": accuracy})


if __name__ == "__main__":
    run({"init": init, "train": train, "evaluate": evaluate})
