"""PyTorch's side of train_bench: the same MLP, optimiser, batch size and data
as `stoke train`, written the way a PyTorch user would: the IDX files read into
tensors once, a TensorDataset and a shuffling DataLoader, a Sequential model on
the CPU. Prints one line per epoch: `epoch SECONDS LOSS ACCURACY`.

usage: train_torch.py IDX_DIR EPOCHS BATCH THREADS VAL_SPLIT
"""
import gzip
import os
import sys
import time

import numpy as np
import torch
from torch import nn


def read_idx(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rb") as f:
        data = f.read()
    dims = data[3]
    shape = [int.from_bytes(data[4 + 4 * i: 8 + 4 * i], "big") for i in range(dims)]
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * dims).reshape(shape)


def find(directory, stem):
    for name in (stem, stem + ".gz"):
        if os.path.exists(os.path.join(directory, name)):
            return os.path.join(directory, name)
    raise FileNotFoundError(os.path.join(directory, stem))


def main():
    directory, epochs, batch, threads, val_split = sys.argv[1:6]
    epochs, batch, threads, val_split = int(epochs), int(batch), int(threads), float(val_split)
    torch.set_num_threads(threads)
    torch.manual_seed(0)
    images = torch.from_numpy(read_idx(find(directory, "train-images-idx3-ubyte")).copy())
    labels = torch.from_numpy(read_idx(find(directory, "train-labels-idx1-ubyte")).astype(np.int64))
    n_train = len(images) - round(val_split * len(images))
    train = torch.utils.data.TensorDataset(images[:n_train], labels[:n_train])
    loader = torch.utils.data.DataLoader(train, batch_size=batch, shuffle=True)
    model = nn.Sequential(nn.Flatten(), nn.Linear(784, 300), nn.ReLU(), nn.Linear(300, 100),
                          nn.ReLU(), nn.Linear(100, 10))
    optimiser = torch.optim.SGD(model.parameters(), lr=0.01)
    loss_fn = nn.CrossEntropyLoss()
    for _ in range(epochs):
        start = time.perf_counter()
        total, correct, seen = 0.0, 0, 0
        for x, y in loader:
            x = x.float() / 255.0
            optimiser.zero_grad()
            logits = model(x)
            loss = loss_fn(logits, y)
            loss.backward()
            optimiser.step()
            total += loss.item() * len(y)
            correct += (logits.argmax(1) == y).sum().item()
            seen += len(y)
        seconds = time.perf_counter() - start
        print(f"epoch {seconds:.4f} {total / seen:.4f} {correct / seen:.4f}", flush=True)


if __name__ == "__main__":
    main()
