"""Remote data from Python: shards packed by `stoke pack` to an S3-compatible
server (s3rver) and served by nginx give the batches of the same shards on
local disk, and `stoke profile s3://... --digest` prints the local digest."""
import os
import shutil
import socket
import subprocess
import time

import pytest

import stoke
from conftest import stoke_cli
from test_loader import digest_update

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
S3RVER = os.path.join(ROOT, "build", "npm", "node_modules", ".bin", "s3rver")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(port, proc, log):
    for _ in range(200):
        if proc.poll() is not None:
            raise RuntimeError(f"server exited: {open(log).read()}")
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing on port {port}: {open(log).read()}")


@pytest.fixture
def servers(tmp_path, jpeg_dir):
    """Local shards of jpeg_dir, nginx serving them, and s3rver holding a
    copy packed to s3://bucket/shards (AWS_* variables set for it)."""
    www = tmp_path / "www"
    subprocess.run([stoke_cli(), "pack", jpeg_dir, str(www / "shards"), "--shard-size", "64K"],
                   check=True, capture_output=True)
    procs = []
    web = free_port()
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        f"master_process off; daemon off; pid {tmp_path}/nginx.pid; error_log {tmp_path}/e.log;\n"
        "events { worker_connections 1024; }\n"
        f"http {{ access_log off; client_body_temp_path {tmp_path}/b; proxy_temp_path {tmp_path}/p;"
        f" fastcgi_temp_path {tmp_path}/f; uwsgi_temp_path {tmp_path}/u;"
        f" scgi_temp_path {tmp_path}/s;"
        f" server {{ listen 127.0.0.1:{web}; root {www}; }} }}\n")
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    log = str(tmp_path / "nginx.out")
    procs.append(subprocess.Popen([nginx, "-c", str(conf), "-p", str(tmp_path), "-e",
                                   str(tmp_path / "e.log")], stdout=open(log, "w"),
                                  stderr=subprocess.STDOUT))
    wait_for(web, procs[-1], log)
    s3 = free_port()
    log = str(tmp_path / "s3rver.out")
    procs.append(subprocess.Popen(["node", "--openssl-legacy-provider", S3RVER, "-d",
                                   str(tmp_path / "s3"), "-p", str(s3), "-a", "127.0.0.1",
                                   "--silent", "--configure-bucket", "bucket"],
                                  stdout=open(log, "w"), stderr=subprocess.STDOUT))
    wait_for(s3, procs[-1], log)
    saved = {k: os.environ.get(k) for k in
             ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION")}
    os.environ.update(AWS_ENDPOINT_URL=f"http://127.0.0.1:{s3}", AWS_ACCESS_KEY_ID="S3RVER",
                      AWS_SECRET_ACCESS_KEY="S3RVER", AWS_REGION="us-east-1")
    subprocess.run([stoke_cli(), "pack", jpeg_dir, "s3://bucket/shards", "--shard-size", "64K"],
                   check=True, capture_output=True)
    yield {"local": str(www / "shards"), "http": f"http://127.0.0.1:{web}/shards",
           "s3": "s3://bucket/shards"}
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    for p in procs:
        p.terminate()
        p.wait(timeout=10)


def batches(path, shuffle):
    data = stoke.Shards(path, size=32, crop="random", flip=True)
    loader = stoke.Loader(data, batch_size=16, shuffle=shuffle, seed=5)
    out = [(images.numpy().tobytes(), labels.numpy().tobytes()) for images, labels in loader]
    return out, loader.stats()


def test_http_and_s3_shards_give_the_batches_of_local_shards(servers):
    for shuffle in (True, "quasi"):
        local, local_stats = batches(servers["local"], shuffle)
        assert local and local_stats["http_requests"] == 0
        for remote in ("http", "s3"):
            got, stats = batches(servers[remote], shuffle)
            assert got == local, (remote, shuffle)
            assert stats["http_requests"] > 0


def test_the_command_line_digest_of_s3_shards_is_the_local_one(servers):
    digests = []
    for path in (servers["local"], servers["s3"]):
        out = subprocess.run(
            [stoke_cli(), "profile", path, "--digest", "--quiet", "--no-ceilings", "--size",
             "32x32", "--crop", "random", "--flip", "--shuffle", "full", "--seed", "5",
             "--batch", "16"], check=True, capture_output=True, text=True).stdout
        digests.append([l.split()[-1] for l in out.splitlines() if l.startswith("digest")][0])
    assert digests[0] == digests[1]
    # And Python's loader over s3:// gives that digest too.
    loader = stoke.Loader(stoke.Shards(servers["s3"], size=32, crop="random", flip=True),
                          batch_size=16, shuffle=True, seed=5)
    h = 0xCBF29CE484222325
    for images, labels in loader:
        h = digest_update(h, images.numpy().tobytes())
        h = digest_update(h, labels.numpy().tobytes())
    assert f"{h:016x}" == digests[0]


def test_a_missing_remote_location_names_the_url():
    with pytest.raises(Exception) as e:
        stoke.Shards(f"http://127.0.0.1:{free_port()}/nothing")
    assert "127.0.0.1" in str(e.value) and "attempts" in str(e.value)
