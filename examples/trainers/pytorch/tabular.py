#!/usr/bin/env python3
"""Logistic regression for a tabular site under ptopofl.trainer/v1, on torch.

It serves both of the protocol's modes (trainer_protocol.run): per task, or,
under worker --trainer-serve, as one long-lived process per site that keeps
torch imported and the site's standardised data loaded between tasks. It
reads the site's files with tabular_numpy.py (numpy) and computes what
ptopofl's in-process site does under the default preset with local_solver
"gd", in float64, so that a campaign run through this trainer matches the
in-process one to rounding:

  data         dataset.ReadCSV / readSplit: a CSV file with a header naming
               the site's label column (task.json's "label") holding 0/1
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

import numpy
import torch

from tabular_numpy import PLAIN_METHODS, load_site, seeded
from trainer_protocol import bad_data, expect, hyper, progress, read_safetensors, roc_auc, run, write_result, write_safetensors

F64 = torch.float64
LOGIT_CLIP = 30.0  # learn.LogitClip
torch.set_num_threads(1)  # one site's small matrices: threads cost more than they give
TENSORS = {}  # the site's data as torch tensors, kept between tasks in serve mode


def site_tensors(task):
    """The site's standardised splits as float64 tensors (load_site's, converted once)."""
    site = load_site(task)
    if TENSORS.get("site") is not site:
        TENSORS.clear()
        TENSORS["site"] = site
        TENSORS.update({k: torch.from_numpy(site[k]) for k in ("x", "y", "tx", "ty")})
    return TENSORS


def read_model(task, features):
    m = read_safetensors(task["model_in"])
    return torch.from_numpy(numpy.concatenate([expect(m, "coef", [features]), expect(m, "intercept", [1])]))


def write_model(task, theta):
    write_safetensors(task["model_out"], {"coef": theta[:-1].numpy(), "intercept": theta[-1:].numpy()})


def scores(theta, x):
    """learn.Logistic.Score: sigmoid of the logit clipped to [-30, 30]."""
    z = (x @ theta[:-1] + theta[-1]).clamp(-LOGIT_CLIP, LOGIT_CLIP)
    return 1 / (1 + torch.exp(-z))


def objective(theta, x, y, c):
    """learn.Logistic.Objective without the gradient."""
    z = x @ theta[:-1] + theta[-1]
    softplus = torch.where(z > 0, z + torch.log1p(torch.exp(-z.abs())), torch.log1p(torch.exp(-z.abs())))
    return (softplus - y * z).sum() + (theta[:-1] ** 2).sum() / (2 * c)


def init(task):
    site = site_tensors(task)
    write_model(task, torch.from_numpy(seeded(task["seed"], site["x"].shape[1])))
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
    site = site_tensors(task)
    x, y = site["x"], site["y"]
    n = len(y)
    theta = read_model(task, x.shape[1])
    if task["round"] == 1:
        # Round 1 as the in-process site starts it under gradient descent:
        # from its own seeded model (learn.SiteInput.initial, seeded by the
        # task's seed), not from the campaign's shared initial model.
        theta = torch.from_numpy(seeded(task["seed"], x.shape[1]))
    anchor = theta.clone()
    for step in range(steps):
        r = scores(theta, x) - y
        grad = torch.cat([x.T @ r / n + theta[:-1] / (c * n), (r.sum() / n).reshape(1)])
        if mu:
            grad += mu * (theta - anchor)
        theta = theta - lr * grad
    progress(steps=steps)
    write_model(task, theta)
    write_result(task, n, {"loss": objective(theta, x, y, c).item()})


def evaluate(task):
    site = site_tensors(task)
    theta = read_model(task, site["x"].shape[1])
    s, ty = scores(theta, site["tx"]), site["ty"]
    accuracy = ((s >= 0.5).to(F64) == ty).to(F64).mean().item()
    write_result(task, len(ty), {"auc": roc_auc(s.tolist(), ty.tolist()), "accuracy": accuracy})


if __name__ == "__main__":
    run({"init": init, "train": train, "evaluate": evaluate})
