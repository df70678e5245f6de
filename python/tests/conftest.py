"""Fixtures for the Python module's tests: small datasets written here or by
`stoke synth` (STOKE_CLI names the command)."""
import gzip
import os
import struct
import subprocess

import pytest


def stoke_cli():
    return os.environ.get("STOKE_CLI", "stoke")


def sample_byte(i, j):
    return (i * 131 + j * 7 + 3) % 256


@pytest.fixture
def idx_dir(tmp_path):
    """An IDX train split of 50 samples of 4x5, sample i's pixel j sample_byte(i, j),
    label i % 10."""
    n, rows, cols = 50, 4, 5
    images = struct.pack(">BBBBIII", 0, 0, 8, 3, n, rows, cols)
    images += bytes(sample_byte(i, j) for i in range(n) for j in range(rows * cols))
    labels = struct.pack(">BBBBI", 0, 0, 8, 1, n) + bytes(i % 10 for i in range(n))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(images)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(labels))
    return str(tmp_path)


@pytest.fixture
def jpeg_dir(tmp_path):
    """64 JPEGs of 40 to 80 pixels in 4 classes."""
    root = tmp_path / "images"
    subprocess.run([stoke_cli(), "synth", str(root), "--count", "64", "--classes", "4",
                    "--min-side", "40", "--max-side", "80"], check=True, capture_output=True)
    return str(root)
