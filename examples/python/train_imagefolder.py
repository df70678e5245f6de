#!/usr/bin/env python3
"""Trains a torchvision model on an ImageFolder (or stoke shards) fed by stoke or,
for comparison, by PyTorch's DataLoader with the same transforms. Single process,
or several ranks with DDP (gloo on CPUs, NCCL on GPUs); stoke takes its rank and
world size from torchrun's RANK and WORLD_SIZE.

  PYTHONPATH=build/release/python python3 examples/python/train_imagefolder.py \\
      build/sample-images --loader stoke --epochs 2

Two ranks, each started with the variables torchrun would set (Debian's torchrun,
PyTorch 1.13 on Python 3.11, fails in its own launcher, before any rank starts):

  for r in 0 1; do RANK=$r WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=29517 \\
      PYTHONPATH=build/release/python python3 examples/python/train_imagefolder.py \\
      build/sample-images --loader stoke & done; wait

Elastic restart (stoke): `--stop-after 20 --checkpoint ck.pt` stops every rank
after 20 steps, rank 0 saving the model, the optimiser and the loader's
state_dict (the same on every rank); `--resume ck.pt` continues that epoch on
any number of ranks (3 after 2, say), each sample of it once, then trains the
remaining epochs as usual. torchrun's elastic restarts give the new ranks
RANK and WORLD_SIZE; pass them the last checkpoint with --resume.
"""
import argparse
import os
import time

import torch
import torch.distributed as dist
import torchvision
from torchvision import transforms

import stoke


def stoke_batches(a, device):
    if a.shards:
        data = stoke.Shards(a.data, size=a.size, crop="random", flip=True, layout="chw")
    else:
        data = stoke.ImageFolder(a.data, size=a.size, crop="random", flip=True, layout="chw")
    loader = stoke.Loader(data, batch_size=a.batch, shuffle=True, seed=a.seed, drop_last=True,
                          device=str(device), dtype=torch.float32, normalize="imagenet",
                          decode_threads=a.workers)
    return loader, lambda epoch: loader.set_epoch(epoch)


def torch_batches(a, device):
    t = transforms.Compose([
        transforms.RandomResizedCrop(a.size), transforms.RandomHorizontalFlip(),
        transforms.ToTensor(), transforms.Normalize([0.485, 0.456, 0.406], [0.229, 0.224, 0.225])])
    data = torchvision.datasets.ImageFolder(a.data, transform=t)
    sampler = (torch.utils.data.distributed.DistributedSampler(data, seed=a.seed)
               if dist.is_initialized() else None)
    loader = torch.utils.data.DataLoader(data, batch_size=a.batch, shuffle=sampler is None,
                                         sampler=sampler, num_workers=a.workers, drop_last=True,
                                         pin_memory=device.type == "cuda")
    return loader, lambda epoch: sampler.set_epoch(epoch) if sampler else None


def main():
    p = argparse.ArgumentParser()
    p.add_argument("data")
    p.add_argument("--loader", choices=["stoke", "torch"], default="stoke")
    p.add_argument("--shards", action="store_true", help="DATA is stoke shards (stoke only)")
    p.add_argument("--model", default="resnet18")
    p.add_argument("--epochs", type=int, default=1)
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--size", type=int, default=112)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--stop-after", type=int, default=0, help="steps, then --checkpoint and exit")
    p.add_argument("--checkpoint", help="where --stop-after saves model, optimiser and loader")
    p.add_argument("--resume", help="a --checkpoint file to continue from, on any world size")
    a = p.parse_args()
    if (a.stop_after > 0) != bool(a.checkpoint) or ((a.checkpoint or a.resume) and a.loader != "stoke"):
        p.error("--stop-after and --checkpoint go together; checkpoints need --loader stoke")

    distributed = int(os.environ.get("WORLD_SIZE", "1")) > 1
    cuda = torch.cuda.is_available()
    if distributed:
        dist.init_process_group("nccl" if cuda else "gloo")
    rank = dist.get_rank() if distributed else 0
    device = torch.device(f"cuda:{int(os.environ.get('LOCAL_RANK', 0))}" if cuda else "cpu")
    torch.manual_seed(a.seed)
    classes = len([d for d in os.listdir(a.data) if os.path.isdir(os.path.join(a.data, d))]) \
        if not a.shards else 1000
    model = torchvision.models.__dict__[a.model](num_classes=classes).to(device)
    if distributed:
        model = torch.nn.parallel.DistributedDataParallel(model, device_ids=[device] if cuda else None)
    opt = torch.optim.SGD(model.parameters(), lr=a.lr, momentum=0.9)
    loader, set_epoch = (stoke_batches if a.loader == "stoke" else torch_batches)(a, device)
    first_epoch = 0
    if a.resume:
        saved = torch.load(a.resume)
        (model.module if distributed else model).load_state_dict(saved["model"])
        opt.load_state_dict(saved["optimizer"])
        loader.load_state_dict(saved["loader"])  # another world size continues the epoch
        first_epoch = saved["loader"]["epoch"]
    steps = 0

    for epoch in range(first_epoch, a.epochs):
        if not (a.resume and epoch == first_epoch):
            set_epoch(epoch)
        start, seen, total_loss = time.perf_counter(), 0, 0.0
        for images, labels in loader:
            images = images.to(device, non_blocking=True)
            labels = labels.to(device, non_blocking=True)
            loss = torch.nn.functional.cross_entropy(model(images), labels)
            opt.zero_grad()
            loss.backward()
            opt.step()
            seen += images.shape[0]
            total_loss += loss.item() * images.shape[0]
            steps += 1
            if steps == a.stop_after:
                if rank == 0:
                    torch.save({"model": (model.module if distributed else model).state_dict(),
                                "optimizer": opt.state_dict(), "loader": loader.state_dict()},
                               a.checkpoint)
                    print(f"stopped after {steps} steps: {a.checkpoint}", flush=True)
                if distributed:
                    dist.destroy_process_group()
                return
        seconds = time.perf_counter() - start
        if rank == 0:
            print(f"epoch {epoch + 1}/{a.epochs}  {a.loader}  {seconds:.1f}s  "
                  f"{seen / seconds:.0f} img/s per rank  loss {total_loss / max(seen, 1):.4f}",
                  flush=True)
    if distributed:
        dist.destroy_process_group()


if __name__ == "__main__":
    main()
