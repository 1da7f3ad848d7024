#!/usr/bin/env python3
"""The deep-small preset's CNN for an image site under ptopofl.trainer/v1.

It follows ptopofl's in-process deep site (package nn, method/deep.go):

  data         dataset.ReadIDX: IDX files of unsigned bytes (optionally
               gzipped), images N x H x W [x C] stored NHWC, pixels / 255
  network      nn.CNN: conv 5x5 x width ('same', zero padding 2) -> 2x2 max-pool
               -> ReLU -> conv 5x5 x 2 width -> pool -> ReLU -> dense `hidden`
               + ReLU (none when hidden is 0) -> dense `classes`. The dense
               layer reads the pooled maps in NHWC order, as nn's does.
  init         nn.Network.Init's scheme: He-normal weights (std sqrt(2/fan-in)),
               N(0, 1/fan-in) for the output layer, zero biases, drawn from a
               torch generator seeded with task.json's seed (not nn's PCG
               stream, so not the same numbers as the Go network's)
  train        nn.Train: local_epochs passes of minibatches of batch_size (the
               last one holds the remainder), shuffled every epoch by a
               generator seeded with `seed`; mean softmax cross-entropy; SGD
               with PyTorch's momentum (v = m v + g, theta -= lr v) or Adam;
               FedProx adds mu (theta - theta_received) to the gradient
  evaluate     method.EvaluateDeep (also after train, on the trained model): top-1 accuracy and the macro one-vs-rest
               ROC AUC of the softmax over the classes present in the test
               split beside another class (0.5 when there is none)
  embed        method.DeepActivations: the penultimate activations (the
               output layer's input) of the training images at `rows`

Parameters are F32 tensors named as torch names them ("conv1.weight",
[width, channels, 5, 5], ...).

Device: CUDA when torch sees a GPU (the worker passes CUDA_VISIBLE_DEVICES
only when the site names it: worker --trainer-env CUDA_VISIBLE_DEVICES),
else the CPU; trainer_params {"device": "cpu"} (or "cuda:1") chooses. It
serves both of the protocol's modes (trainer_protocol.run); under worker
--trainer-serve one process per site keeps torch and CUDA initialised, the
site's images on the device and the network built between tasks.
"""

import gzip
import struct
import sys

import numpy
import torch
import torch.nn.functional as F

from trainer_protocol import (bad_data, cached, expect, hyper, progress, read_safetensors, roc_auc, run, write_result,
                              write_safetensors)

DEFAULT_DEVICE = "cuda" if torch.cuda.is_available() else "cpu"
IMAGES = {}  # the site's images on their device, kept between tasks in serve mode
NETWORKS = {}  # the network built for them, likewise
# float32 convolutions, as nn computes them: cuDNN would otherwise use TF32
# (10-bit mantissas) on Ampere and later GPUs.
torch.backends.cudnn.allow_tf32 = False
torch.backends.cuda.matmul.allow_tf32 = False
CHUNK = 256  # images per inference pass


def read_idx(path, dims):
    """The values and dimensions of an IDX file of unsigned bytes."""
    try:
        with open(path, "rb") as f:
            blob = f.read()
        if blob[:2] == b"\x1f\x8b":
            blob = gzip.decompress(blob)
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise bad_data("unreadable", f"{path}: cannot read: {type(e).__name__}")
    if len(blob) < 4 or blob[:2] != b"\0\0" or blob[2] != 0x08 or blob[3] not in dims:
        raise bad_data("not_idx", f"{path}: not an IDX file of unsigned bytes with {dims} dimensions")
    nd = blob[3]
    if len(blob) < 4 + 4 * nd:
        raise bad_data("not_idx", f"{path}: file ends inside the IDX header")
    shape = struct.unpack(f">{nd}I", blob[4:4 + 4 * nd])
    size = 1
    for d in shape:
        size *= d
    if 0 in shape or len(blob) != 4 + 4 * nd + size:
        raise bad_data("not_idx", f"{path}: the header declares {size} values, the file holds {len(blob) - 4 - 4 * nd}")
    data = torch.frombuffer(bytearray(blob[4 + 4 * nd:]), dtype=torch.uint8)
    return data.reshape(shape)


def read_images(files, classes):
    """(images N x H x W x C float32 in [0, 1], labels) of one split."""
    images, labels = read_idx(files[0], (3, 4)), read_idx(files[1], (1,))
    if images.dim() == 3:
        images = images.unsqueeze(-1)
    if len(labels) != len(images):
        raise bad_data("not_idx", f"{files[1]}: {len(labels)} labels for {len(images)} images")
    if int(labels.max()) >= classes:
        raise bad_data("bad_label", f"{files[1]}: a label is not below the campaign's {classes} classes")
    return images.float() / 255, labels.long()


class CNN(torch.nn.Module):
    def __init__(self, shape, width, hidden, classes):
        super().__init__()
        h, w, c = shape
        if h < 4 or w < 4:
            raise bad_data("image_shape", f"images of {h}x{w}: the CNN's two 2x2 poolings need at least 4x4")
        self.conv1 = torch.nn.Conv2d(c, width, 5, padding=2)
        self.conv2 = torch.nn.Conv2d(width, 2 * width, 5, padding=2)
        sizes = [(h // 4) * (w // 4) * 2 * width] + ([hidden] if hidden > 0 else [])
        self.hidden = torch.nn.ModuleList(torch.nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))
        self.out = torch.nn.Linear(sizes[-1], classes)

    def penultimate(self, x):
        x = x.permute(0, 3, 1, 2)  # NHWC -> NCHW
        x = F.relu(F.max_pool2d(self.conv1(x), 2))
        x = F.relu(F.max_pool2d(self.conv2(x), 2))
        x = x.permute(0, 2, 3, 1).flatten(1)  # NHWC order, as nn's dense layer reads it
        for layer in self.hidden:
            x = F.relu(layer(x))
        return x

    def forward(self, x):
        return self.out(self.penultimate(x))

    def init(self, seed):
        g = torch.Generator().manual_seed(seed)
        with torch.no_grad():
            for name, p in self.named_parameters():
                if name.endswith(".bias"):
                    p.zero_()
                    continue
                fan_in = p[0].numel()
                gain = 1.0 if name.startswith("out.") else 2.0
                p.copy_(torch.randn(p.shape, generator=g) * (gain / fan_in) ** 0.5)


def device_of(task):
    """The device of the task: trainer_params' "device", else CUDA when torch sees a GPU."""
    name = hyper(task, "device", DEFAULT_DEVICE)
    try:
        dev = torch.device(name)
        if dev.type == "cuda" and not torch.cuda.is_available():
            raise RuntimeError("no CUDA device visible")
    except (RuntimeError, TypeError) as e:
        raise bad_data("device", f"device {name!r}: {e}")
    return dev


def site_images(task, device):
    """(train, test) splits of (images on device, labels on device), read once per site."""
    classes = int(hyper(task, "classes", 10))

    def load():
        train = read_images(task["train_data"], classes)
        test = read_images(task["test_data"], classes)
        if test[0].shape[1:] != train[0].shape[1:]:
            raise bad_data("image_shape", "test and training images differ in shape")
        return tuple((x.to(device), y.to(device)) for x, y in (train, test))

    return cached(IMAGES, task["train_data"] + task["test_data"], (classes, str(device)), load)


def setup(task):
    """The network of the campaign's hyper-parameters (built once per shape), the
    input model loaded into it, and the site's images, all on the task's device."""
    device = device_of(task)
    train, test = site_images(task, device)
    classes = int(hyper(task, "classes", 10))
    key = (tuple(train[0].shape[1:]), int(hyper(task, "width", 16)), int(hyper(task, "hidden", 0)), classes, str(device))
    if key not in NETWORKS:
        NETWORKS.clear()
        NETWORKS[key] = CNN(key[0], key[1], key[2], classes).to(device)
    net = NETWORKS[key]
    if task.get("model_in"):
        model = read_safetensors(task["model_in"])
        state = {k: torch.from_numpy(expect(model, k, v.shape, numpy.float32)) for k, v in net.state_dict().items()}
        net.load_state_dict(state)
    return net, device, train, test


def save(task, net):
    write_safetensors(task["model_out"], {k: v.detach().float().cpu().numpy() for k, v in net.state_dict().items()})


@torch.no_grad()
def in_chunks(fn, x):
    return torch.cat([fn(x[i:i + CHUNK]).float().cpu() for i in range(0, len(x), CHUNK)])


def init(task):
    net, _, (x, _), _ = setup(task)
    net.init(task["seed"])
    save(task, net)
    write_result(task, len(x), {})


def train(task):
    method = task["method"]
    if method in ("scaffold", "pfedme"):
        raise bad_data("unsupported_method", f"this trainer does not do method {method!r}")
    if hyper(task, "dp", "off") != "off":
        raise bad_data("unsupported_dp", "this trainer does not train under differential privacy")
    net, device, (x, y), test = setup(task)
    if y.min() == y.max():
        raise bad_data("single_class", "every training image has the same label")
    net.train()
    lr, epochs = float(hyper(task, "lr", 0.05)), int(hyper(task, "local_epochs", 1))
    bs = min(int(hyper(task, "batch_size", 32)), len(x))
    mu = float(hyper(task, "mu", 0.1)) if method == "fedprox" else 0.0
    params = list(net.parameters())
    center = [p.detach().clone() for p in params]
    if hyper(task, "optimizer", "sgd") == "adam":
        opt = torch.optim.Adam(params, lr=lr)
    else:
        opt = torch.optim.SGD(params, lr=lr, momentum=float(hyper(task, "momentum", 0.9)))
    shuffle = torch.Generator().manual_seed(task["seed"])
    for epoch in range(epochs):
        order = torch.randperm(len(x), generator=shuffle).to(device)
        losses = []
        for lo in range(0, len(x), bs):
            batch = order[lo:lo + bs]
            loss = F.cross_entropy(net(x[batch]), y[batch])
            opt.zero_grad()
            loss.backward()
            if mu:
                for p, c in zip(params, center):
                    p.grad.add_(p.detach() - c, alpha=mu)
            opt.step()
            losses.append(loss.detach())
        mean_loss = torch.stack(losses).mean().item()
        progress(epoch=epoch + 1, of=epochs, loss=mean_loss)
    save(task, net)
    # The trained model's own scores on the test split, before aggregation,
    # as the in-process deep site reports them (its update evaluation).
    accuracy, auc = score(net, *test)
    write_result(task, len(x), {"loss": mean_loss, "accuracy": accuracy, "auc": auc})


def score(net, x, y):
    """(top-1 accuracy, macro one-vs-rest AUC) of net on images x, labels y."""
    net.eval()
    logits = in_chunks(net, x)
    y = y.cpu()
    accuracy = (logits.argmax(1) == y).double().mean().item()
    probs = torch.exp((logits - logits.max(1, keepdim=True).values).double())
    probs /= probs.sum(1, keepdim=True)
    aucs = []
    for c in range(logits.shape[1]):
        positives = int((y == c).sum())
        if 0 < positives < len(y):
            aucs.append(roc_auc(probs[:, c].tolist(), (y == c).double().tolist()))
    return accuracy, (sum(aucs) / len(aucs) if aucs else 0.5)


def evaluate(task):
    net, _, _, (x, y) = setup(task)
    accuracy, auc = score(net, x, y)
    write_result(task, len(y), {"accuracy": accuracy, "auc": auc})


def embed(task):
    net, device, (x, _), _ = setup(task)
    rows = task.get("rows") or []
    if not rows or len(set(rows)) != len(rows) or not all(isinstance(r, int) and 0 <= r < len(x) for r in rows):
        raise bad_data("bad_rows", f"rows must be distinct indices of the {len(x)} training images")
    net.eval()
    emb = in_chunks(net.penultimate, x[torch.tensor(rows, device=device)])
    write_safetensors(task["embed_out"], {"embeddings": emb.numpy()})
    write_result(task, len(rows), {})


if __name__ == "__main__":
    print(f"cnn.py: torch sees {'a CUDA device' if torch.cuda.is_available() else 'no CUDA device'}; "
          f"default device {DEFAULT_DEVICE}", file=sys.stderr, flush=True)
    run({"init": init, "train": train, "evaluate": evaluate, "embed": embed})
