#!/usr/bin/env python3
"""torch_step.py SECONDS [BATCH]: a PyTorch training step on the GPU, on a batch
resident there (no data loading), run for SECONDS after a warm-up; prints one
JSON line with images per second. ResNet-50 from torchvision when it is
installed, else a ResNet-style stack of the same kind (bottleneck blocks,
batch norm, ReLU) written here. channels_last, bfloat16 autocast, SGD: the
host thread launches every kernel eagerly, as most training loops do, so a
busy CPU beside it shows in its rate. Used by tools/bench/core_share.sh."""
import json
import sys
import time

import torch
from torch import nn


def bottleneck(cin, mid, stride):
    cout = mid * 4
    body = nn.Sequential(
        nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
        nn.Conv2d(mid, mid, 3, stride=stride, padding=1, bias=False), nn.BatchNorm2d(mid),
        nn.ReLU(inplace=True), nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout))
    skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride=stride, bias=False),
                          nn.BatchNorm2d(cout)) if stride != 1 or cin != cout else nn.Identity())

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.body, self.skip = body, skip

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    return Block()


def resnet_like(classes=1000):
    layers = [nn.Conv2d(3, 64, 7, stride=2, padding=3, bias=False), nn.BatchNorm2d(64),
              nn.ReLU(inplace=True), nn.MaxPool2d(3, stride=2, padding=1)]
    cin = 64
    for mid, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for b in range(blocks):
            layers.append(bottleneck(cin, mid, stride if b == 0 else 1))
            cin = mid * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, classes)]
    return nn.Sequential(*layers)


def main():
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 15.0
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 128
    try:
        import torchvision
        model, name = torchvision.models.resnet50(), "torchvision resnet50"
    except ImportError:
        model, name = resnet_like(), "resnet50-like (torchvision not installed)"
    model = model.cuda().to(memory_format=torch.channels_last)
    opt = torch.optim.SGD(model.parameters(), lr=0.1, momentum=0.9)
    x = torch.randn(batch, 3, 224, 224, device="cuda").to(memory_format=torch.channels_last)
    y = torch.randint(0, 1000, (batch,), device="cuda")
    loss_fn = nn.CrossEntropyLoss()

    def step():
        opt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    for _ in range(10):
        step()
    torch.cuda.synchronize()
    steps, t0 = 0, time.perf_counter()
    while time.perf_counter() - t0 < seconds:
        for _ in range(5):
            step()
        steps += 5
        torch.cuda.synchronize()
    elapsed = time.perf_counter() - t0
    print(json.dumps({"model": name, "batch": batch, "steps": steps, "seconds": elapsed,
                      "images_per_second": steps * batch / elapsed}))


if __name__ == "__main__":
    main()
