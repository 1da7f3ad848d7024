#!/usr/bin/python3
"""The authors' Table 1, in memory, from a copy of their paper-era code.

Usage: /usr/bin/python3 scripts/authors-table1.py AUTHORS [--json]

AUTHORS is a copy of github.com/MorillaLab/TopoFederatedL at commit
c027eae (the directory holding framework/, or framework/ itself). Nothing
of it is part of this repository: this script reads the five modules
framework/{data,tda,ptopofl,fl,baselines}.py from AUTHORS, applies the two
mechanical fixes they need to import (bytes that are not UTF-8 are
dropped; ptopofl.py's `def aggregate` is indented one level too deep) in
memory, and drives them as the authors' v1.0.0 examples/full_comparison.py
drives its package: both scenarios at seed 42 (make_healthcare_federated
with 8 clients and clients 1 and 5 adversarial, make_benchmark_federated
with 10), 15 rounds, method seeds 42 (pTopoFL), +100 (FedAvg), +200
(FedProx, mu 0.1), +300 (SCAFFOLD), +400 (pFedMe, lambda 15). The sixth
row of `starter experiment table1`, local training, is experiments.py's
run_local_only at +500; the paper's "FedAvg" row is experiments.py's
run_fedavg_rounds (their FedAvgServer over TopoFLClient without the
topological columns). 6 methods x 2 scenarios: the 12 campaigns of
`starter experiment table1 --seeds 1`, in one process, in memory.

It prints each row's final AUC and accuracy; the pTopoFL rows must be
testdata/paper/*/expected.json's (HC 0.8411, BM 0.9103), or it fails.
Needs Debian's python3-numpy, python3-scipy and python3-sklearn.
"""
import importlib.util
import json
import os
import sys
import types

import numpy as np

MODULES = ("tda", "data", "ptopofl", "fl", "baselines")  # import order: tda first
N_ROUNDS, SEED = 15, 42
EXPECTED = {"healthcare": 0.841086450304317, "benchmark": 0.9102705466171596}


def framework_dir(path):
    for d in (os.path.join(path, "framework"), path):
        if all(os.path.isfile(os.path.join(d, m + ".py")) for m in MODULES):
            return d
    sys.exit(f"authors-table1: {path} holds no framework/{{{','.join(MODULES)}}}.py "
             "(a copy of MorillaLab/TopoFederatedL at commit c027eae)")


def load(fdir):
    """Imports framework.* from fdir with the two mechanical fixes."""
    pkg = types.ModuleType("framework")
    pkg.__path__ = []
    sys.modules["framework"] = pkg
    for name in MODULES:
        path = os.path.join(fdir, name + ".py")
        src = open(path, "rb").read().decode("utf-8", "ignore")
        if name == "ptopofl":
            src = src.replace("\n        def aggregate(self, clients, round_num=0):",
                              "\n    def aggregate(self, clients, round_num=0):")
        mod = types.ModuleType("framework." + name)
        mod.__file__ = path
        sys.modules[mod.__name__] = mod
        exec(compile(src, path, "exec"), mod.__dict__)
        setattr(pkg, name, mod)
    return pkg


def mean_scores(clients, **kw):
    ms = [c.evaluate(**kw) for c in clients if c.X_test is not None and len(c.X_test) > 0]
    return float(np.mean([m["auc"] for m in ms])), float(np.mean([m["accuracy"] for m in ms]))


def run_scenario(fw, data):
    rows = {}
    # pTopoFL, as full_comparison.py's _run_ptopofl.
    clients = [fw.ptopofl.pTopoFLClient(d["client_id"], d["X_train"], d["y_train"], d["X_test"], d["y_test"],
                                        random_state=SEED) for d in data]
    server = fw.ptopofl.pTopoFLServer(n_clusters=2, alpha_blend=0.3)
    server.fit_clusters([c.get_descriptor() for c in clients])
    accs, aucs = fw.ptopofl.run_ptopofl_rounds(clients, server, n_rounds=N_ROUNDS)
    rows["ptopofl"] = (aucs[-1], accs[-1])

    # The paper's FedAvg row: experiments.py's run_fedavg_rounds.
    clients = [fw.fl.TopoFLClient(d["client_id"], d["X_train"], d["y_train"], d["X_test"], d["y_test"],
                                  random_state=SEED + 100) for d in data]
    server = fw.fl.FedAvgServer()
    for r in range(N_ROUNDS):
        for c in clients:
            c.train_local(global_model_params=server.global_model_params, tda_augment=False)
        server.aggregate(clients, round_num=r)
        auc, acc = mean_scores(clients, use_tda=False)
    rows["fedavg"] = (auc, acc)

    # FedProx, SCAFFOLD, pFedMe: full_comparison.py's _run_baseline, with the
    # loop of v1.0.0's run_baseline_rounds.
    for m, (cc, sc, off, kw) in {
        "fedprox": (fw.baselines.FedProxClient, fw.baselines.FedProxServer, 200, {"mu": 0.1}),
        "scaffold": (fw.baselines.SCAFFOLDClient, fw.baselines.SCAFFOLDServer, 300, {}),
        "pfedme": (fw.baselines.pFedMeClient, fw.baselines.pFedMeServer, 400, {"lam": 15.0}),
    }.items():
        clients = [cc(d["client_id"], d["X_train"], d["y_train"], d["X_test"], d["y_test"],
                      random_state=SEED + off, **kw) for d in data]
        server = sc()
        for r in range(N_ROUNDS):
            gp, gc = getattr(server, "global_params", None), getattr(server, "global_control", None)
            for c in clients:
                if gc is not None:
                    c.train_local(global_params=gp, global_control=gc)
                else:
                    c.train_local(global_params=gp)
            server.aggregate(clients, round_num=r)
            for c in clients:
                c.set_global_params(server.global_params)
            auc, acc = mean_scores(clients)
        rows[m] = (auc, acc)

    # Local training: experiments.py's run_local_only.
    clients = [fw.fl.TopoFLClient(d["client_id"], d["X_train"], d["y_train"], d["X_test"], d["y_test"],
                                  random_state=SEED + 500) for d in data]
    for r in range(N_ROUNDS):
        for c in clients:
            c.train_local(global_model_params=None, tda_augment=False)
        auc, acc = mean_scores(clients, use_tda=False)
    rows["local"] = (auc, acc)
    return rows


def main():
    args = [a for a in sys.argv[1:] if a != "--json"]
    if len(args) != 1:
        sys.exit(__doc__.strip().splitlines()[2])
    fw = load(framework_dir(args[0]))
    scenarios = {
        "healthcare": fw.data.make_healthcare_federated(n_clients=8, adversarial_clients=[1, 5], random_state=SEED)[0],
        "benchmark": fw.data.make_benchmark_federated(n_clients=10, random_state=SEED)[0],
    }
    out = {}
    for sc, data in scenarios.items():
        out[sc] = run_scenario(fw, data)
        got = out[sc]["ptopofl"][0]
        if abs(got - EXPECTED[sc]) > 1e-9:
            sys.exit(f"authors-table1: {sc} pTopoFL final AUC {got:.10f}, expected.json says {EXPECTED[sc]:.10f}: "
                     f"not the code of commit c027eae?")
    if "--json" in sys.argv[1:]:
        print(json.dumps({sc: {m: {"final_auc": a, "final_acc": c} for m, (a, c) in rows.items()} for sc, rows in out.items()}))
        return
    print(f"{'scenario':11s} {'method':9s} {'final AUC':>9s} {'accuracy':>9s}")
    for sc, rows in out.items():
        for m, (a, c) in rows.items():
            print(f"{sc:11s} {m:9s} {a:9.4f} {c:9.4f}")


if __name__ == "__main__":
    main()
