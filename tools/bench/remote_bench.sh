#!/usr/bin/env bash
# Remote data against the page cache, on the README's sample JPEGs packed by
# stoke pack: nginx serves the shards on loopback, and the tests' fault proxy
# (stoke_fault_proxy) in front of it adds DELAY_MS to every request and caps
# each connection at MBPS MB/s (defaults 30 ms and 100 MB/s: an object store's
# first byte and one connection's bandwidth). Server, proxy and loader share
# the machine's cores. Prints, for quasi and full shuffle, local and remote:
# steady samples/s, HTTP requests, retries, requests/s; then the same remote
# runs with resets (1 in RESET_EVERY requests) and 503 SlowDown (1 in
# SLOWDOWN_EVERY), whose digests must equal the local ones.
#
#   tools/bench/remote_bench.sh [IMAGES]      (default build/sample-images)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
build=${BUILD:-$root/build/release}
images=${1:-$root/build/sample-images}
delay=${DELAY_MS:-30}
mbps=${MBPS:-100}
epochs=${EPOCHS:-3}
stoke=$build/tools/stoke
proxy=$build/tests/stoke_fault_proxy
work=$(mktemp -d)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
wait_port() { for _ in $(seq 100); do (exec 3<>/dev/tcp/127.0.0.1/"$1") 2>/dev/null && return 0; sleep 0.1; done; echo "nothing on port $1" >&2; return 1; }

"$stoke" pack "$images" "$work/www/shards" >/dev/null
web=$(free_port)
mkdir -p "$work/nginx"
cat >"$work/nginx/nginx.conf" <<CONF
master_process off; daemon off; pid $work/nginx/pid; error_log $work/nginx/error.log;
events { worker_connections 4096; }
http { access_log off; keepalive_requests 1000000;
  client_body_temp_path $work/nginx/b; proxy_temp_path $work/nginx/p; fastcgi_temp_path $work/nginx/f;
  uwsgi_temp_path $work/nginx/u; scgi_temp_path $work/nginx/s;
  server { listen 127.0.0.1:$web; root $work/www; } }
CONF
/usr/sbin/nginx -c "$work/nginx/nginx.conf" -p "$work/nginx" -e "$work/nginx/error.log" &
pids+=($!)
wait_port "$web"
start_proxy() {  # PORT then flags
  local port=$1; shift
  "$proxy" --upstream "$web" --port "$port" "$@" >"$work/proxy-$port.log" &
  pids+=($!)
  wait_port "$port"
}
slow=$(free_port); start_proxy "$slow" --delay-ms "$delay" --mbps "$mbps"
faulty=$(free_port)
start_proxy "$faulty" --delay-ms "$delay" --mbps "$mbps" --reset-every "${RESET_EVERY:-10}" \
  --slowdown-every "${SLOWDOWN_EVERY:-20}"
cat "$work"/www/shards/* >/dev/null  # the local runs read from the page cache

run() {  # NAME PATH ORDER
  "$stoke" profile "$2" --format shards --size 224x224 --crop random --flip --batch 256 \
    --shuffle "$3" --epochs "$epochs" --digest --json "$work/$1.json" >"$work/$1.txt" 2>&1 ||
    { cat "$work/$1.txt"; exit 1; }
}
echo "stoke profile, $epochs epochs of $(ls "$images"/*/* | wc -l) JPEGs (random-resized crops to 224, flips, batch 256), $(nproc) cores"
echo "remote: nginx on loopback through stoke_fault_proxy at ${delay} ms a request, ${mbps} MB/s a connection"
for order in quasi full; do
  run "local-$order" "$work/www/shards" "$order"
  run "remote-$order" "http://127.0.0.1:$slow/shards" "$order"
  run "faulty-$order" "http://127.0.0.1:$faulty/shards" "$order"
done
/usr/bin/python3 - "$work" <<'PY'
import json, re, sys
work = sys.argv[1]
def load(name):
    j = json.load(open(f"{work}/{name}.json"))
    digest = re.search(r"digest\s+(\S+)", open(f"{work}/{name}.txt").read())
    return j, digest.group(1) if digest else "?"
print(f"{'order':6} {'data':28} {'samples/s':>9} {'vs local':>8} {'requests':>8} {'retries':>7} {'req/s':>7}  digest")
for order in ("quasi", "full"):
    local, local_digest = load(f"local-{order}")
    for name, what in ((f"local-{order}", "local page cache"),
                       (f"remote-{order}", "http, delay+cap"),
                       (f"faulty-{order}", "http, delay+cap+resets+503")):
        j, digest = load(name)
        rate = j["steady_samples_per_second"]
        print(f"{order:6} {what:28} {rate:9.0f} {rate / local['steady_samples_per_second']:8.2f} "
              f"{j['http_requests']:8d} {j['http_retries']:7d} {j['http_requests_per_second']:7.0f}  "
              f"{digest}{'' if digest == local_digest else '  DIFFERS'}")
PY
