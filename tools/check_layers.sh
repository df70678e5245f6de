#!/usr/bin/env bash
# The library's stages include only the stages below them (CMakeLists.txt draws
# the order), the public headers include only public headers, and no library
# source includes the tool code that stays out of the installed library
# (stoke_tools: profile/, decode/synth_image.h, io/page_cache.h, cuda/h2d_peak.h).
set -euo pipefail
cd "$(dirname "$0")/.."
declare -A allowed=(
  [util]=""
  [io]="util"
  [decode]="util"
  [cuda]="util"
  [ring]="util"
  [dataset]="util io decode"
  [copy]="util cuda ring"
  [loader]="util io decode cuda ring dataset copy"
  [train]="util cuda copy"
  [profile]="util io decode dataset"
)
tool_headers='^(profile/.*|decode/synth_image\.h|io/page_cache\.h|cuda/h2d_peak\.h)$'
tool_sources='^src/(profile/.*|decode/synth_image\.cc|io/page_cache\.cc|cuda/h2d_peak(_none)?\.cc)$'
bad=0
while read -r file; do
  stage=$(echo "$file" | cut -d/ -f2)
  if [ -z "${allowed[$stage]+x}" ]; then echo "check_layers: $file: src/$stage/ is not a known stage"; bad=1; continue; fi
  while read -r header; do
    dep=${header%%/*}
    [ "$dep" = stoke ] && continue
    [ "$dep" = "$stage" ] && [[ ! $header =~ $tool_headers || $file =~ $tool_sources ]] && continue
    if [[ $header =~ $tool_headers ]] && [[ ! $file =~ $tool_sources ]]; then
      echo "check_layers: $file includes tool code $header (stoke_tools is not in the library)"; bad=1; continue
    fi
    [[ $header =~ $tool_headers ]] && continue
    if [[ " ${allowed[$stage]} " != *" $dep "* ]]; then
      echo "check_layers: $file ($stage) includes $header: $stage may include only: ${allowed[$stage]:-nothing}"; bad=1
    fi
  done < <(grep -o '^#include "[a-z_]*/[^"]*"' "$file" | sed 's/#include "//;s/"$//')
done < <(git ls-files --cached --others --exclude-standard 'src/*.h' 'src/*.cc' 'src/*.cu')
if grep -n '#include "[a-z_]*/' include/stoke/*.h | grep -v '#include "stoke/'; then
  echo "check_layers: public headers include private ones (above)"; bad=1
fi
[ "$bad" = 0 ] && echo "check_layers: every include follows the stage order"
exit $bad
