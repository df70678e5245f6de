#!/usr/bin/env python3
"""The JPEG table of issue 28, on the README's sample images: PyTorch's DataLoader
against stoke on the files and on stoke's shards, for the same images at quality
90 and 97, and resized to a short side of 256 before packing. Random-resized crops
to SIZE with flips, full shuffle, batches of BATCH, THREADS workers or decode
threads, uint8, no training step, all in one run on the same cores.

  PyTorch: torch.utils.data.DataLoader over a torchvision ImageFolder, two ways
           to decode: PIL (the default loader, RandomResizedCrop on the image)
           and torchvision.io.decode_jpeg (RandomResizedCrop with antialiasing
           on the uint8 tensor); the table shows each and takes the faster as
           the baseline.
  stoke:   `stoke profile` on the files and on their shards (`stoke pack`),
           steady samples/s (the run's second half), median of ROUNDS.

The folders: FOLDER (default build/sample-images, written by `stoke synth` as
tools/run.sh writes it, if missing), FOLDER-q97 (the same images at quality 97,
`stoke synth --quality 97`), and FOLDER-s256-files (FOLDER resized with PIL to a
short side of 256 at quality 90, for the loaders that read files). The shards:
FOLDER.shards, FOLDER-q97.shards and FOLDER.s256 (`stoke pack --short-side 256`,
stoke's own resampler). Each is made once and kept.

usage: python3 tools/bench/quality_table.py [FOLDER] [--threads N] [--batch B]
       [--size S] [--batches N] [--rounds N]
(PYTHONPATH is not needed: only the stoke command runs; STOKE_CLI names it,
default build/release/tools/stoke.)"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

import torch
import torchvision
from PIL import Image

from python_bench import rate as torch_rate
from python_bench import torch_loader

SYNTH = ["--count", "2000", "--classes", "10", "--min-side", "256", "--max-side", "500"]


def run(cmd):
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)


def stoke_rate(cli, path, size, batch, threads, rounds):
    rates = []
    with tempfile.TemporaryDirectory() as work:
        out = os.path.join(work, "run.json")
        for _ in range(rounds):
            run([cli, "profile", path, "--size", f"{size}x{size}", "--crop", "random", "--flip",
                 "--batch", str(batch), "--shuffle", "full", "--epochs", "3",
                 "--decode-threads", str(threads), "--no-ceilings", "--json", out])
            with open(out) as f:
                rates.append(json.load(f)["steady_samples_per_second"])
    return statistics.median(rates)


def resize_files(src, dst, side):
    """src's JPEGs with a short side above `side` resized to it (PIL, antialiased) at
    quality 90, the others copied; the same class folders."""
    for cls in sorted(os.listdir(src)):
        os.makedirs(os.path.join(dst, cls), exist_ok=True)
        for name in sorted(os.listdir(os.path.join(src, cls))):
            with Image.open(os.path.join(src, cls, name)) as im:
                w, h = im.size
                if min(w, h) > side:
                    scale = side / min(w, h)
                    im = im.resize((max(side, round(w * scale)), max(side, round(h * scale))),
                                   Image.BILINEAR, reducing_gap=None)
                im.convert("RGB").save(os.path.join(dst, cls, name), quality=90)


def mean_kb(folder):
    sizes = [os.path.getsize(os.path.join(r, f)) for r, _, fs in os.walk(folder) for f in fs
             if f.endswith(".jpg")]
    return sum(sizes) / len(sizes) / 1e3


def main():
    p = argparse.ArgumentParser()
    p.add_argument("folder", nargs="?", default="build/sample-images")
    p.add_argument("--threads", type=int, default=os.cpu_count())
    p.add_argument("--batch", type=int, default=256)
    p.add_argument("--size", type=int, default=224)
    p.add_argument("--batches", type=int, default=12)
    p.add_argument("--rounds", type=int, default=3)
    a = p.parse_args()
    cli = os.environ.get("STOKE_CLI", "build/release/tools/stoke")
    folder = a.folder.rstrip("/")
    q97, s256_files = folder + "-q97", folder + "-s256-files"
    if not os.path.isdir(folder):
        run([cli, "synth", folder] + SYNTH)
    if not os.path.isdir(q97):
        run([cli, "synth", q97] + SYNTH + ["--quality", "97"])
    if not os.path.isdir(s256_files):
        resize_files(folder, s256_files, 256)
    rows = [("q90", folder, folder + ".shards", []),
            ("q97", q97, q97 + ".shards", []),
            ("q90, short side 256", s256_files, folder + ".s256", ["--short-side", "256"])]
    for _, _, shards, pack_options in rows:
        if not os.path.isdir(shards):
            run([cli, "pack", folder if pack_options else shards[:-len(".shards")], shards]
                + pack_options)
    torch.set_num_threads(1)
    print(f"quality_table: {folder}, {a.threads} workers/decode threads, batch {a.batch}, "
          f"{a.size}x{a.size} random-resized crops + flips, full shuffle, uint8; torch "
          f"{torch.__version__}, torchvision {torchvision.__version__}, {os.cpu_count()} cores")
    print(f"{'images':22s} {'KB':>5s} {'PIL':>6s} {'decode_jpeg':>11s} {'stoke files':>17s} "
          f"{'stoke shards':>18s}")
    for name, files, shards, _ in rows:
        pil = torch_rate(torch_loader(files, a.size, a.batch, a.threads, "pil"), a.batches)
        dj = torch_rate(torch_loader(files, a.size, a.batch, a.threads, "decode_jpeg"),
                        a.batches)
        base = max(pil, dj)
        sf = stoke_rate(cli, files, a.size, a.batch, a.threads, a.rounds)
        ss = stoke_rate(cli, shards, a.size, a.batch, a.threads, a.rounds)
        print(f"{name:22s} {mean_kb(files):5.1f} {pil:6.0f} {dj:11.0f} {sf:8.0f} ({sf / base:4.1f}x) "
              f"{ss:8.0f} ({ss / base:4.1f}x)")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
