"""The Python module `stoke` against its promises: the batches are the C++
loader's, they cross without a copy, a stopped epoch resumes exactly, holding
every buffer is an error and not a hang, and bad data and bad options name
themselves."""
import glob
import os
import shutil
import subprocess
import threading

import numpy
import pytest
import torch

import stoke
from conftest import sample_byte, stoke_cli


def digest_update(h, data):
    """tools/stoke/digest.h's Digest::Update, for comparing with `stoke profile --digest`."""
    mask = (1 << 64) - 1

    def mix(h, w):
        h = ((h ^ w) * 0x9E3779B97F4A7C15) & mask
        return h ^ (h >> 29)

    n = len(data)
    words = numpy.frombuffer(data[: n - n % 8], dtype="<u8")
    for w in words.tolist():
        h = mix(h, w)
    tail = int.from_bytes(data[n - n % 8:] + bytes(8 - n % 8), "little") if n % 8 else 0
    h = mix(h, tail ^ ((n % 8) << 56))
    return mix(h, n)


def test_batches_are_the_samples_in_order(idx_dir):
    loader = stoke.Loader(stoke.Idx(idx_dir), batch_size=8)
    assert len(loader) == 7
    seen = 0
    for images, labels in loader:
        assert isinstance(images, torch.Tensor) and images.dtype == torch.uint8
        assert labels.dtype == torch.int64
        for k in range(images.shape[0]):
            i = seen + k
            assert images[k].flatten().tolist() == [sample_byte(i, j) for j in range(20)]
            assert labels[k].item() == i % 10
        seen += images.shape[0]
    assert seen == 50


def test_batches_equal_the_command_line_loaders(jpeg_dir):
    # The same options through `stoke profile --digest` (the C++ loader) and here.
    out = subprocess.run(
        [stoke_cli(), "profile", jpeg_dir, "--digest", "--quiet", "--no-ceilings", "--size",
         "32x32", "--crop", "random", "--flip", "--shuffle", "full", "--seed", "3", "--batch",
         "16"], check=True, capture_output=True, text=True).stdout
    expected = [l.split()[-1] for l in out.splitlines() if l.startswith("digest")][0]
    data = stoke.ImageFolder(jpeg_dir, size=32, crop="random", flip=True)
    loader = stoke.Loader(data, batch_size=16, shuffle=True, seed=3)
    h = 0xCBF29CE484222325
    for images, labels in loader:
        h = digest_update(h, images.numpy().tobytes())
        h = digest_update(h, labels.numpy().tobytes())
    assert f"{h:016x}" == expected


def test_tensors_alias_the_ring_slot_and_numpy_reads_it_too(idx_dir):
    loader = stoke.Loader(stoke.Idx(idx_dir), batch_size=8)
    images, labels = loader.next_arrays()  # the DLPack exporters themselves
    assert images.data_address % 4096 == 0  # a ring slot: page-aligned
    t = torch.from_dlpack(images)
    assert t.data_ptr() == images.data_address
    n = numpy.from_dlpack(images)
    assert n.__array_interface__["data"][0] == images.data_address
    assert torch.from_dlpack(labels).data_ptr() == labels.data_address
    assert t.shape == (8, 4, 5) and n.shape == (8, 4, 5)
    # copy=True: tensors of the caller's own, equal to the batch.
    copied = stoke.Loader(stoke.Idx(idx_dir), batch_size=8, copy=True)
    c_images, _ = next(iter(copied))
    assert c_images.data_ptr() != images.data_address
    assert torch.equal(c_images, t)


def test_a_stopped_epoch_resumes_exactly_with_other_thread_counts(jpeg_dir):
    data = stoke.ImageFolder(jpeg_dir, size=32, crop="random", flip=True)

    def batches(loader):
        return [(i.clone(), l.clone()) for i, l in loader]

    whole = stoke.Loader(data, batch_size=8, shuffle=True, seed=5, decode_threads=2)
    whole.set_epoch(1)
    reference = batches(whole)
    first = stoke.Loader(data, batch_size=8, shuffle=True, seed=5, decode_threads=2)
    first.set_epoch(1)
    it = iter(first)
    head = [tuple(t.clone() for t in next(it)) for _ in range(3)]
    state = first.state_dict()
    assert state["epoch"] == 1 and state["batch"] == 3
    del it, first
    resumed = stoke.Loader(data, batch_size=8, shuffle=True, seed=5, decode_threads=0,
                           read_threads=1)
    resumed.load_state_dict(state)
    rest = batches(resumed)
    assert len(head) + len(rest) == len(reference)
    for (a, b), (c, d) in zip(head + rest, reference):
        assert torch.equal(a, c) and torch.equal(b, d)
    other = stoke.Loader(data, batch_size=8, shuffle=True, seed=6)
    with pytest.raises(ValueError, match="'seed' is 5 but this loader's is 6"):
        other.load_state_dict(state)


def test_each_iteration_is_a_whole_epoch_like_a_dataloader(idx_dir):
    loader = stoke.Loader(stoke.Idx(idx_dir), batch_size=8)
    for images, labels in loader:
        break  # a loop cut short
    again = [labels[0].item() for images, labels in loader]
    assert len(again) == len(loader)  # the epoch again, from its first batch
    assert again[0] == 0
    assert loader.state_dict()["epoch"] == 1  # a whole epoch moves on to the next
    loader.set_epoch(0)
    assert [labels[0].item() for images, labels in loader] == again


def test_holding_every_buffer_raises_instead_of_hanging(idx_dir):
    loader = stoke.Loader(stoke.Idx(idx_dir), batch_size=4, ring_slots=2)
    held = []
    result = {}

    def consume():
        try:
            for batch in loader:
                held.append(batch)
        except stoke.Error as e:
            result["error"] = str(e)

    t = threading.Thread(target=consume)
    t.start()
    t.join(timeout=30)
    assert not t.is_alive(), "Loader.__next__ hung with every ring slot held"
    assert "ring_slots" in result["error"] and "copy=True" in result["error"]
    held.clear()  # the leases go back; the loader goes on
    images, _ = next(iter(loader))
    assert images.shape[0] == 4


def test_a_bad_jpeg_fails_naming_it_or_is_skipped_keeping_the_batch_size(jpeg_dir):
    bad = os.path.join(jpeg_dir, "class_001", "broken.jpg")
    with open(bad, "wb") as f:
        f.write(b"\xff\xd8\xff\xe0 this is not a JPEG")
    data = stoke.ImageFolder(jpeg_dir, size=32)
    with pytest.raises(stoke.Error, match="broken.jpg"):
        for _ in stoke.Loader(data, batch_size=8, on_error="fail"):
            pass
    skip = stoke.Loader(data, batch_size=8, on_error="skip", drop_last=True)
    sizes = [images.shape[0] for images, _ in skip]
    assert sizes and all(s == 8 for s in sizes)
    stats = skip.stats()
    assert stats["skipped"] == 1 and "broken.jpg" in stats["skipped_samples"][0][1]


def test_bad_options_and_paths_name_themselves(idx_dir, tmp_path):
    data = stoke.Idx(idx_dir)
    with pytest.raises(ValueError, match="batch_size"):
        stoke.Loader(data, batch_size=0)
    with pytest.raises(ValueError, match="shuffle"):
        stoke.Loader(data, shuffle="sideways")
    with pytest.raises(ValueError, match="on_error"):
        stoke.Loader(data, on_error="ignore")
    with pytest.raises(ValueError, match="dtype"):
        stoke.Loader(data, dtype="complex64")
    with pytest.raises(FileNotFoundError, match="nowhere"):
        stoke.ImageFolder(str(tmp_path / "nowhere"))


def test_float16_normalised_batches_and_torchrun_ranks(idx_dir, monkeypatch):
    loader = stoke.Loader(stoke.Idx(idx_dir), batch_size=10, dtype=torch.float16,
                          normalize=(0.5, 0.25))
    images, _ = next(iter(loader))
    assert images.dtype == torch.float16
    expected = (sample_byte(0, 0) / 255 - 0.5) / 0.25
    assert abs(images[0].flatten()[0].item() - expected) < 1e-2
    # torchrun's RANK and WORLD_SIZE reach the loader; the ranks get equal counts.
    seen = []
    for rank in (0, 1):
        monkeypatch.setenv("RANK", str(rank))
        monkeypatch.setenv("WORLD_SIZE", "2")
        part = stoke.Loader(stoke.Idx(idx_dir), batch_size=5, shuffle=True, seed=1)
        assert part.options["rank"] == rank and part.options["world_size"] == 2
        seen.append([int(i) for images, labels in part for i in labels])
    assert len(seen[0]) == len(seen[1])


def run_python(script, *args, timeout=120):
    """Runs `script` in a fresh interpreter (this module's environment); its
    CompletedProcess. A hang is a TimeoutExpired, which fails the test."""
    return subprocess.run([os.sys.executable, "-c", script, *args], capture_output=True, text=True,
                          env=os.environ, timeout=timeout)


TRUNCATED_SHARD_SCRIPT = r"""
import glob, os, sys
import stoke
shards, policy = sys.argv[1], sys.argv[2]
loader = stoke.Loader(stoke.Shards(shards, size=32), batch_size=4, shuffle=True,
                      on_error=policy, ring_slots=2)
it = iter(loader)
next(it)  # reading has started; the shards are open (mapped: they are in the page cache)
victim = sorted(glob.glob(os.path.join(shards, "*.stk")))[0]
os.truncate(victim, os.path.getsize(victim) // 2)
n = 1
try:
    while True:
        next(it)
        n += 1
except StopIteration:
    print("batches", n, "skipped", loader.stats()["skipped"])
except Exception as e:  # the fail policy's error
    print("error", type(e).__name__, e)
"""


@pytest.mark.parametrize("policy", ["skip", "fail"])
def test_a_shard_truncated_while_loading_is_an_error_not_a_signal(jpeg_dir, tmp_path, policy):
    # The review's scenario: another process truncates a shard under a Python
    # loader. The default backend mapped it and the interpreter died of SIGBUS
    # (exit 135) at the first read of the lost half, under either policy.
    shards = str(tmp_path / "shards")
    subprocess.run([stoke_cli(), "pack", jpeg_dir, shards, "--shard-size", "64K"], check=True,
                   capture_output=True)
    run = run_python(TRUNCATED_SHARD_SCRIPT, shards, policy)
    assert run.returncode == 0, run.stdout + run.stderr
    words = run.stdout.split()
    if policy == "skip":
        assert words[0] == "batches" and int(words[1]) == 16, run.stdout  # 64 images, 4 a batch
        assert int(words[3]) > 0, run.stdout
    else:
        assert words[0] == "error", run.stdout
        assert ".stk" in run.stdout and "offset" in run.stdout, run.stdout


def test_first_conversions_on_two_threads_do_not_deadlock(idx_dir):
    # The first conversion imports torch, which releases the GIL; a second
    # thread converting meanwhile held the GIL while it waited on the
    # function-local static's guard that the first thread held: a deadlock.
    script = r"""
import sys, threading
import stoke
loaders = [stoke.Loader(stoke.Idx(sys.argv[1]), batch_size=8) for _ in range(4)]
seen = []
def run(loader):
    seen.append(sum(images.shape[0] for images, labels in loader))
threads = [threading.Thread(target=run, args=(l,)) for l in loaders]
for t in threads: t.start()
for t in threads: t.join()
print(sorted(seen), "torch" in sys.modules)
"""
    run = run_python(script, idx_dir, timeout=60)
    assert run.returncode == 0, run.stdout + run.stderr
    assert run.stdout.strip() == "[50, 50, 50, 50] True", run.stdout


def test_copy_without_torch_copies_numpy_arrays(idx_dir):
    # copy=True called .clone(), which NumPy arrays do not have.
    script = r"""
import sys
sys.modules["torch"] = None  # as if PyTorch were not installed
import numpy, stoke
loader = stoke.Loader(stoke.Idx(sys.argv[1]), batch_size=8, copy=True)
images, labels = next(iter(loader))
assert isinstance(images, numpy.ndarray) and images.flags.owndata, type(images)
assert images.shape == (8, 4, 5) and labels.tolist() == list(range(8)), labels
print("ok")
"""
    run = run_python(script, idx_dir)
    assert run.returncode == 0 and run.stdout.strip() == "ok", run.stdout + run.stderr


def test_a_second_thread_moving_the_loader_during_a_wait_is_refused(jpeg_dir):
    # The consumer waits in __next__ with the GIL released; another thread's
    # load_state_dict (a seek) ran meanwhile and could hand the waiting
    # consumer a batch that was never decoded. Now it raises, and every batch
    # the consumer gets is whole.
    loader = stoke.Loader(stoke.ImageFolder(jpeg_dir, size=64), batch_size=8, shuffle=True,
                          decode_threads=1, ring_slots=2)
    state = loader.state_dict()
    refused = []
    stop = threading.Event()

    def meddle():
        while not stop.is_set():
            try:
                loader.load_state_dict(state)
            except RuntimeError as e:
                refused.append(str(e))

    consumed = 0
    thread = threading.Thread(target=meddle)
    thread.start()
    try:
        for _ in range(40):
            try:
                images, labels = next(iter(loader))
            except RuntimeError as e:  # the consumer may be the one refused
                assert "in use by another thread" in str(e), e
                continue
            assert images.shape == (8, 64, 64, 3)
            consumed += 1
    finally:
        stop.set()
        thread.join()
    assert consumed > 0
    assert refused and "in use by another thread" in refused[0], refused[:1]


def test_ctrl_c_stops_a_loader_stalled_on_storage(tmp_path, jpeg_dir):
    # The consumer waited on a condition variable with the GIL released and
    # never looked for signals: Ctrl-C could not stop a loader whose storage
    # hung (NFS, a dying disk). Here the storage is a FIFO nobody writes to.
    root = tmp_path / "folder"
    (root / "c").mkdir(parents=True)
    first = sorted(glob.glob(os.path.join(jpeg_dir, "*", "*.jpg")))[0]
    for name in ("a.jpg", "b.jpg", "c.jpg"):
        shutil.copy(first, root / "c" / name)
    script = r"""
import os, signal, sys, threading
import stoke
root = sys.argv[1]
# Two ring slots, a batch of one: opening reads a.jpg and b.jpg, no further.
loader = stoke.Loader(stoke.ImageFolder(root, size=32), batch_size=1, ring_slots=2)
fifo = os.path.join(root, "c", "c.jpg")
os.unlink(fifo)
os.mkfifo(fifo)  # opening it for reading blocks until a writer comes: a hung disk
it = iter(loader)
next(it)
next(it)
threading.Timer(0.5, os.kill, (os.getpid(), signal.SIGINT)).start()
try:
    next(it)  # c.jpg
    print("not interrupted")
except KeyboardInterrupt:
    print("interrupted")
# Let the hung read finish (end of file), so that the loader can be destroyed.
os.close(os.open(fifo, os.O_WRONLY | os.O_NONBLOCK))
del it, loader
"""
    run = run_python(script, str(root), timeout=60)
    assert run.returncode == 0 and run.stdout.strip() == "interrupted", run.stdout + run.stderr
