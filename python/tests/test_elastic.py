"""Elastic resume from Python, as a job would do it, with no stoke internals: 4
loaders of world 4 stop after k steps, one rank's state_dict is kept, and 3
loaders of world 3 (in a second run, with twice the batch size) continue the
epoch. On an IDX dataset whose samples hold their own index, every sample of the
epoch is seen exactly once, in every order."""
import gzip
import struct

import numpy
import pytest

import stoke

SAMPLES = 1000


@pytest.fixture
def counting_idx(tmp_path):
    """An IDX train split whose sample i is i as 4 little-endian bytes (2x2)."""
    images = struct.pack(">BBBBIII", 0, 0, 8, 3, SAMPLES, 2, 2)
    images += b"".join(struct.pack("<I", i) for i in range(SAMPLES))
    labels = struct.pack(">BBBBI", 0, 0, 8, 1, SAMPLES) + bytes(i % 10 for i in range(SAMPLES))
    (tmp_path / "train-images-idx3-ubyte").write_bytes(images)
    (tmp_path / "train-labels-idx1-ubyte.gz").write_bytes(gzip.compress(labels))
    return str(tmp_path)


def indices(images):
    """The sample indices a batch of (N, 2, 2) uint8 images holds."""
    return numpy.ascontiguousarray(images.numpy()).reshape(-1, 4).view("<u4").ravel().tolist()


def loaders(path, shuffle, world, batch_size, state=None):
    out = []
    for rank in range(world):
        loader = stoke.Loader(stoke.Idx(path), batch_size=batch_size, shuffle=shuffle, seed=7,
                              rank=rank, world_size=world, decode_threads=1, read_threads=1)
        loader.set_epoch(2)
        if state is not None:
            loader.load_state_dict(state)
        out.append(loader)
    return out


@pytest.mark.parametrize("shuffle", ["sequential", "full", "block", "quasi"])
@pytest.mark.parametrize("batch_after", [10, 20])
def test_four_ranks_stop_and_three_continue_the_epoch(counting_idx, shuffle, batch_after):
    seen = []
    # 4 ranks, batches of 10, stopped after 7 steps (as a preempted job is).
    four = loaders(counting_idx, shuffle, 4, 10)
    iterators = [iter(loader) for loader in four]
    for _ in range(7):
        for it in iterators:
            images, _ = next(it)
            seen += indices(images)
    states = [loader.state_dict() for loader in four]
    assert all(state == states[0] for state in states)  # any rank's copy restores the job
    state = states[1]
    del iterators, four
    # 3 ranks continue the epoch from it.
    three = loaders(counting_idx, shuffle, 3, batch_after, state)
    counts = {len(loader) for loader in three}
    assert len(counts) == 1  # equal batch counts on every rank
    for loader in three:
        for images, _ in loader:
            seen += indices(images)
    assert len(seen) == SAMPLES  # 720 left over 3 ranks: no padding
    assert sorted(seen) == list(range(SAMPLES))
    # The next epoch is any epoch of 3 ranks: 334 a rank, 2 of them padding.
    for loader in three:
        loader.set_epoch(3)
    after = [i for loader in three for images, _ in loader for i in indices(images)]
    assert len(after) == 1002 and set(after) == set(range(SAMPLES))


def test_a_state_from_another_order_is_a_value_error_naming_it(counting_idx):
    [full] = loaders(counting_idx, "full", 1, 10)
    state = full.state_dict()
    [block] = loaders(counting_idx, "block", 1, 10)
    with pytest.raises(ValueError, match="'shuffle' is full but this loader's is block"):
        block.load_state_dict(state)
    state["position"] = state["position"].replace("seed=7", "seed=x")
    with pytest.raises(ValueError, match="seed: 'x' is not a number"):
        full.load_state_dict(state)
