#!/usr/bin/env python3
"""stoke.Loader against torch.utils.data.DataLoader, in one run, on the same
ImageFolder: random-resized crops and flips to SIZE, uint8 CHW batches, the same
number of workers as stoke has decode threads. Prints images/s of each and the
ratio; then the same with a small training step (a torch.nn CNN on the CPU, on
the batch pooled 4x4) consuming every batch, the step code shared by both.

usage: python3 tools/bench/python_bench.py [FOLDER] [--threads N] [--batch B]
       [--size S] [--batches N]
(FOLDER defaults to build/sample-images, made with `stoke synth` if missing;
PYTHONPATH must reach the stoke module, e.g. build/release/python.)"""
import argparse
import os
import subprocess
import sys
import time

import torch
import torchvision
from torchvision import transforms


def decode_jpeg_file(path):
    return torchvision.io.decode_jpeg(torchvision.io.read_file(path))


def torch_loader(folder, size, batch, workers, decoder="pil"):
    """PIL: torchvision's default loader, the crop on the image; decode_jpeg:
    torchvision.io.decode_jpeg, an antialiased crop on the uint8 tensor."""
    if decoder == "pil":
        t = transforms.Compose([transforms.RandomResizedCrop(size),
                                transforms.RandomHorizontalFlip(), transforms.PILToTensor()])
        data = torchvision.datasets.ImageFolder(folder, transform=t)
    else:
        t = transforms.Compose([transforms.RandomResizedCrop(size, antialias=True),
                                transforms.RandomHorizontalFlip()])
        data = torchvision.datasets.ImageFolder(folder, transform=t, loader=decode_jpeg_file)
    return torch.utils.data.DataLoader(data, batch_size=batch, shuffle=True, num_workers=workers,
                                       drop_last=True, persistent_workers=workers > 0)


def stoke_loader(folder, size, batch, workers):
    import stoke  # here, so that quality_table.py can use this file without the module

    data = stoke.ImageFolder(folder, size=size, crop="random", flip=True, layout="chw")
    return stoke.Loader(data, batch_size=batch, shuffle=True, drop_last=True,
                        decode_threads=workers)


def rate(loader, batches, step=None):
    """Images/s over `batches` batches after one warm-up batch, across epochs."""
    done, seen, start = 0, 0, None
    while done < batches + 1:
        for images, labels in loader:
            if step:
                step(images, labels)
            if done == 0:
                start = time.perf_counter()
            else:
                seen += images.shape[0]
            done += 1
            if done == batches + 1:
                break
    return seen / (time.perf_counter() - start)


def make_step(size):
    torch.manual_seed(0)
    model = torch.nn.Sequential(
        torch.nn.Conv2d(3, 16, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.Conv2d(16, 32, 3, stride=2, padding=1), torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1), torch.nn.Flatten(), torch.nn.Linear(32, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)

    def step(images, labels):
        # Pooled to a quarter of the side first: a step of a few ms per batch,
        # in the range where the input pipeline decides the rate.
        x = torch.nn.functional.avg_pool2d(images.float().div_(255), 4)
        loss = torch.nn.functional.cross_entropy(model(x), labels % 10)
        opt.zero_grad()
        loss.backward()
        opt.step()

    return step


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder", nargs="?", default="build/sample-images")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--batch", type=int, default=64)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batches", type=int, default=30)
    a = p.parse_args()
    if not os.path.isdir(a.folder):
        cli = os.environ.get("STOKE_CLI", "build/release/tools/stoke")
        subprocess.run([cli, "synth", a.folder, "--count", "2000"], check=True)
    torch.set_num_threads(1)
    print(f"python_bench: {a.folder}, {a.threads} workers/decode threads, batch {a.batch}, "
          f"{a.size}x{a.size} random-resized crops + flips, uint8 CHW, {a.batches} batches "
          f"after a warm-up batch; torch {torch.__version__}, {os.cpu_count()} cores")
    for label, step in (("loader alone", None), ("with a CNN step", make_step(a.size))):
        t = rate(torch_loader(a.folder, a.size, a.batch, a.threads), a.batches, step)
        s = rate(stoke_loader(a.folder, a.size, a.batch, a.threads), a.batches, step)
        print(f"{label:16s}  torch DataLoader {t:8.0f} img/s   stoke.Loader {s:8.0f} img/s   "
              f"ratio {s / t:5.2f}x")
    sys.stdout.flush()


if __name__ == "__main__":
    main()
