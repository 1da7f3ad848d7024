"""The program side of ptopofl.trainer/v1, shared by the example trainers.

It needs the standard library and numpy only (tabular.py and cnn.py add
torch on top). A trainer hands run() its task functions; run() serves both
of the protocol's modes, which the site's worker chooses:

  per task   (worker --trainer NAME=COMMAND): one process per task. The
             task file's path is in $PTOPOFL_TASK; the process does the
             task, writes its outputs and then the result file, last, and
             exits 0, or exits 65 (bad site data), 66 (bad input model) or
             75 (transient) with error.json beside the task file.
  serve      (worker --trainer-serve NAME=COMMAND): one long-lived process
             per site, started with PTOPOFL_SERVE=1. It reads one absolute
             task.json path per line on standard input, does that task as
             above (a failure's status goes into error.json instead of the
             exit status), and prints "ptopofl:done <path>" on standard
             output. What a trainer keeps at module level (the site's data,
             a network on its device) stays loaded between tasks.

error.json holds a short kind, which reaches the round's manifest, and a
message that goes to the worker's log only: neither should hold data
values. The worker runs the program in a sealed environment: PATH, HOME, TMPDIR,
LANG/LC_*, the protocol's variables and only what the site adds with
--trainer-env (CUDA_VISIBLE_DEVICES, say).

Safetensors is read and written here by hand (8-byte little-endian header
length, a JSON header, then the little-endian row-major data) into and from
numpy arrays. Little-endian hosts only.
"""

import json
import os
import struct
import sys
import traceback

import numpy

PROTOCOL = "ptopofl.trainer/v1"
EXIT_FAILED = 1
EXIT_BAD_SITE_DATA = 65
EXIT_BAD_MODEL = 66
EXIT_TRANSIENT = 75

DTYPES = {"F32": numpy.dtype("<f4"), "F64": numpy.dtype("<f8")}
DTYPE_NAMES = {v: k for k, v in DTYPES.items()}


class Fail(Exception):
    """A task failure with its status (65, 66 or 75) and error.json kind."""

    def __init__(self, code, kind, message):
        super().__init__(message)
        self.code, self.kind = code, kind


def bad_data(kind, message):
    return Fail(EXIT_BAD_SITE_DATA, kind, message)


def bad_model(message):
    return Fail(EXIT_BAD_MODEL, "bad_model", message)


def transient(kind, message):
    return Fail(EXIT_TRANSIENT, kind, message)


def run(tasks):
    """Serve tasks[name](task) in the mode the worker chose; never returns."""
    if os.environ.get("PTOPOFL_SERVE") == "1":
        while True:
            line = sys.stdin.readline()
            if not line:  # the worker closed our input: it is stopping
                sys.exit(0)
            path = line.strip()
            if path:
                do(tasks, path, serve=True)
                print("ptopofl:done " + path, flush=True)
    path = os.environ.get("PTOPOFL_TASK")
    if not path:
        print("neither PTOPOFL_TASK nor PTOPOFL_SERVE=1 is set: a ptopofl site worker runs this program",
              file=sys.stderr)
        sys.exit(2)
    sys.exit(do(tasks, path, serve=False))


def do(tasks, path, serve):
    """Do the task at path; return its exit status (0: result written)."""
    where = os.path.dirname(os.path.abspath(path))
    try:
        with open(path) as f:
            task = json.load(f)
        if task.get("protocol") != PROTOCOL:
            raise bad_data("protocol", f"task.json protocol is not {PROTOCOL}")
        if task.get("task") not in tasks:
            raise bad_data("unsupported_task", f"this trainer does not do task {task.get('task')!r}")
        tasks[task["task"]](task)
        return 0
    except Fail as e:
        code, kind, message = e.code, e.kind, str(e)
    except Exception as e:  # a bug, or a resource that failed (CUDA out of memory)
        traceback.print_exc()
        code, kind, message = EXIT_FAILED, type(e).__name__, f"{type(e).__name__} (traceback in the log)"
    if serve and code not in (EXIT_BAD_SITE_DATA, EXIT_BAD_MODEL):
        code = EXIT_TRANSIENT  # serve mode has no exit status: 75 is "retry"
    report = {"kind": kind, "message": message}
    if serve:
        report["status"] = code
    commit(os.path.join(where, "error.json"), json.dumps(report).encode())
    print(f"{kind}: {message}", file=sys.stderr, flush=True)
    return code


def hyper(task, name, default):
    """A hyper-parameter from task.json, or default when it is absent."""
    v = task.get("hyperparameters", {}).get(name)
    return default if v is None else v


def progress(**fields):
    """A progress line: counters the worker makes the heartbeat's details."""
    print("ptopofl:progress " + json.dumps(fields), flush=True)


def commit(path, data):
    """Write bytes to path through a temporary name in the same directory."""
    tmp = path + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, path)


def write_result(task, num_examples, metrics):
    """Write the result file: last, since it marks the task as done.

    A metric that is NaN or infinite is written as json writes it (NaN,
    Infinity), which is not JSON: the worker names it (NonFiniteMetric) and
    the site drops out of the round, not retried.
    """
    body = {"num_examples": int(num_examples), "metrics": {k: float(v) for k, v in metrics.items()}}
    commit(task["result"], json.dumps(body).encode())


def read_safetensors(path):
    """Read a safetensors file into {name: numpy array} (F32 and F64 only)."""
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
            begin, end = t["data_offsets"]
            out[name] = numpy.frombuffer(buf[begin:end], dtype=DTYPES[t["dtype"]]).reshape(t["shape"]).copy()
        return out
    except Exception as e:  # any malformed file: struct, JSON, key or size errors
        raise bad_model(f"input model is not a readable F32/F64 safetensors file ({type(e).__name__})")


def expect(model, name, shape, dtype=numpy.float64):
    """model[name] as dtype, checked for its shape and finiteness."""
    if name not in model:
        raise bad_model(f"input model has no tensor {name!r}")
    t = model[name]
    if list(t.shape) != list(shape):
        raise bad_model(f"tensor {name!r} has shape {list(t.shape)}, want {list(shape)}")
    if not numpy.isfinite(t).all():
        raise bad_model(f"tensor {name!r} holds a value that is not finite")
    return t.astype(dtype)


def write_safetensors(path, tensors, metadata=None):
    """Write {name: numpy array of float32 or float64}, tensors in name order."""
    header, chunks, offset = {}, [], 0
    for name in sorted(tensors, key=lambda s: s.encode()):
        t = numpy.ascontiguousarray(tensors[name])
        if t.dtype.newbyteorder("<") not in DTYPE_NAMES:
            raise ValueError(f"tensor {name!r} is {t.dtype}: a model's tensors are float32 or float64")
        data = t.astype(t.dtype.newbyteorder("<")).tobytes()
        header[name] = {"dtype": DTYPE_NAMES[t.dtype.newbyteorder("<")], "shape": list(t.shape),
                        "data_offsets": [offset, offset + len(data)]}
        chunks.append(data)
        offset += len(data)
    if metadata:
        header["__metadata__"] = {str(k): str(v) for k, v in metadata.items()}
    head = json.dumps(header, separators=(",", ":")).encode()
    head += b" " * (-len(head) % 8)  # the data starts 8-byte aligned
    commit(path, struct.pack("<Q", len(head)) + head + b"".join(chunks))


def cached(cache, files, extra, load):
    """load(), or what it gave the last time files (by name, size and
    modification time) and extra were the same: a serve-mode process keeps
    its site's data loaded between tasks."""
    key = [extra]
    for f in files:
        try:
            st = os.stat(f)
        except OSError as e:
            raise bad_data("unreadable", f"{f}: cannot read: {type(e).__name__}")
        key.append((f, st.st_size, st.st_mtime_ns))
    key = tuple(key)
    if key not in cache:
        cache.clear()  # one site per process: the latest data only
        cache[key] = load()
    return cache[key]


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
