#!/usr/bin/env bash
# Clang's thread-safety analysis (-Wthread-safety) over every source that uses
# util/mutex.h's annotated Mutex: a field marked STOKE_GUARDED_BY(mu_) touched
# without mu_ held fails. GCC builds ignore the annotations; this is their check.
set -euo pipefail
cd "$(dirname "$0")/.."
clang=$(command -v clang++ || true)
if [ -z "$clang" ]; then echo "check_threads: clang++ is missing (tools/install_deps.sh installs it)"; exit 1; fi
# Sources that include an annotated header, directly or through the loader's,
# the window cache's or the copy engine's.
files=$(git ls-files --cached --others --exclude-standard 'src/*.cc' 'tests/*.cc' |
  xargs grep -l -e '"util/mutex.h"' -e '"ring/protocol.h"' -e '"loader/loader_impl.h"' \
    -e '"loader/window_cache.h"' -e '"copy/copy_engine.h"' || true)
# The CUDA device's sources need the toolkit's headers.
cuda=(-isystem /usr/local/cuda/include)
status=0
for f in $files; do
  "$clang" -std=c++20 -fsyntax-only -Wthread-safety -Wthread-safety-beta -Werror \
    -DBOOST_ASIO_HAS_IO_URING -Isrc -Iinclude -Itests -Itools/stoke "${cuda[@]}" "$f" ||
    { echo "check_threads: $f"; status=1; }
done
echo "check_threads: $(echo "$files" | wc -w) files analysed"
exit $status
