"""The process side of ptopofl.trainer/v1, shared by tabular.py and cnn.py.

One process runs one task: it reads $PTOPOFL_TASK (task.json in its working
directory D), writes its outputs, and writes the result file last, as the
commit marker. The exit status says what a failure means: 65 bad site data
and 66 a bad input model (neither retried), 75 a transient failure; D/error.json
gives a short kind and a message that never holds data values.

Safetensors is read and written here by hand (8-byte little-endian header
length, a JSON header, then the little-endian row-major data), so that the
trainers need nothing beyond torch. Little-endian hosts only.
"""

import json
import os
import struct
import sys

import torch

PROTOCOL = "ptopofl.trainer/v1"
EXIT_PROTOCOL = 2
EXIT_BAD_SITE_DATA = 65
EXIT_BAD_MODEL = 66
EXIT_TRANSIENT = 75

DTYPES = {"F32": torch.float32, "F64": torch.float64}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class Fail(Exception):
    """A task failure with its exit status and error.json kind."""

    def __init__(self, code, kind, message):
        super().__init__(message)
        self.code, self.kind = code, kind


def bad_data(kind, message):
    return Fail(EXIT_BAD_SITE_DATA, kind, message)


def bad_model(message):
    return Fail(EXIT_BAD_MODEL, "bad_model", message)


def run(tasks):
    """Run the task task.json names with tasks[name](task); exit accordingly."""
    path = os.environ.get("PTOPOFL_TASK", "task.json")
    where = os.path.dirname(os.path.abspath(path))
    try:
        with open(path) as f:
            task = json.load(f)
        if task.get("protocol") != PROTOCOL:
            raise Fail(EXIT_PROTOCOL, "protocol", f"task.json protocol is not {PROTOCOL}")
        if task.get("task") not in tasks:
            raise bad_data("unsupported_task", f"this trainer does not do task {task.get('task')!r}")
        tasks[task["task"]](task)
    except Fail as e:
        with open(os.path.join(where, "error.json"), "w") as f:
            json.dump({"kind": e.kind, "message": str(e)}, f)
        print(f"{e.kind}: {e}", file=sys.stderr)
        sys.exit(e.code)


def hyper(task, name, default):
    """A hyper-parameter from task.json, or default when it is absent."""
    v = task.get("hyperparameters", {}).get(name)
    return default if v is None else v


def progress(**fields):
    print("ptopofl:progress " + json.dumps(fields), flush=True)


def commit(path, data):
    """Write bytes to path through a temporary name in the same directory."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_result(task, num_examples, metrics):
    """Write the result file: last, since it marks the task as done."""
    body = {"num_examples": int(num_examples), "metrics": {k: float(v) for k, v in metrics.items()}}
    commit(task["result"], json.dumps(body).encode())


def read_safetensors(path):
    """Read a safetensors file into {name: tensor} (F32 and F64 only)."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
        (n,) = struct.unpack("<Q", blob[:8])
        header = json.loads(blob[8:8 + n])
        buf = memoryview(blob)[8 + n:]
        out = {}
        for name, t in header.items():
            if name == "__metadata__":
                continue
            dtype = DTYPES[t["dtype"]]
            begin, end = t["data_offsets"]
            x = torch.frombuffer(bytearray(buf[begin:end]), dtype=dtype) if end > begin else torch.empty(0, dtype=dtype)
            out[name] = x.reshape(t["shape"])
        return out
    except Fail:
        raise
    except Exception as e:  # any malformed file: struct, JSON, key or size errors
        raise bad_model(f"input model is not a readable F32/F64 safetensors file ({type(e).__name__})")


def expect(model, name, shape, dtype):
    """model[name] converted to dtype, checked for its shape and finiteness."""
    if name not in model:
        raise bad_model(f"input model has no tensor {name!r}")
    t = model[name]
    if list(t.shape) != list(shape):
        raise bad_model(f"tensor {name!r} has shape {list(t.shape)}, want {list(shape)}")
    if not torch.isfinite(t).all():
        raise bad_model(f"tensor {name!r} holds a value that is not finite")
    return t.to(dtype)


def write_safetensors(path, tensors, metadata=None):
    """Write {name: tensor} (float32 or float64), tensors in name order."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors, key=lambda s: s.encode()):
        t = tensors[name].detach().cpu().contiguous()
        data = t.numpy().tobytes()
        header[name] = {"dtype": DTYPE_NAMES[t.dtype], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned
    commit(path, struct.pack("<Q", len(head)) + head + b"".join(chunks))


def roc_auc(scores, labels):
    """ROC AUC with tied scores counted half (mid-ranks), 0.5 for one class.

    eval.ROCAUC's formula: (sum of the positives' ranks - n+(n+ + 1)/2) / (n+ n-).
    scores and labels are sequences of floats; labels are 0 or 1.
    """
    order = sorted(range(len(scores)), key=lambda i: scores[i])
    rank_sum, n_pos, i = 0.0, 0, 0
    while i < len(order):
        j = i
        while j < len(order) and scores[order[j]] == scores[order[i]]:
            j += 1
        mid = (i + 1 + j) / 2
        for k in range(i, j):
            if labels[order[k]] == 1:
                rank_sum += mid
                n_pos += 1
        i = j
    n_neg = len(scores) - n_pos
    if n_pos == 0 or n_neg == 0:
        return 0.5
    return (rank_sum - n_pos * (n_pos + 1) / 2) / (n_pos * n_neg)
