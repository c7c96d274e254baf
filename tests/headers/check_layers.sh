#!/usr/bin/env bash
# Fails, naming file and line, when a header includes a higher layer, includes another
# folder's detail/, or includes libtorch below the libtorch layers (Debian puts ATen/ on the
# default include path, so the compiler cannot catch it), includes a deprecated path (a
# forwarding header of ../compat/: API.md, "Renamed"), or when a folder has no rank.
set -u
root=${1:?include dir}
rank() {
  case "$1" in
    core) echo 0 ;; graph|io|transport) echo 1 ;; partition|storage) echo 2 ;;
    sampling) echo 3 ;; server) echo 4 ;; distributed) echo 5 ;; loaders) echo 6 ;;
    runtime) echo 7 ;; nn) echo 8 ;; train|gpu) echo 9 ;; infer) echo 10 ;; tasks) echo 11 ;;
    *) echo -1 ;;
  esac
}
bad=0
checked=0
while IFS= read -r -d '' f; do
  rel=${f#"$root"/distgraph/}
  layer=${rel%%/*}
  [[ "$rel" == */* ]] || layer=umbrella
  checked=$((checked + 1))
  if [[ $layer != umbrella && $(rank "$layer") -lt 0 ]]; then
    echo "$f: folder '$layer' has no rank here: give it one (and a row in ARCHITECTURE.md)"; bad=1
  fi
  while IFS=: read -r line text; do
    inc=$(sed -E 's/.*#include\s*[<"]distgraph\/([a-z_]+)\/.*/\1/' <<<"$text")
    if [[ $layer != umbrella && $(rank "$inc") -gt $(rank "$layer") ]]; then
      echo "$f:$line: layer '$layer' includes higher layer '$inc'"; bad=1
    fi
    target=$(sed -E 's/.*#include\s*[<"](distgraph\/[^">]+)[">].*/\1/' <<<"$text")
    if [[ ! -f $root/$target && -f $root/../compat/$target ]]; then
      echo "$f:$line: includes the deprecated path $target: include where it forwards"; bad=1
    fi
    if [[ $text =~ distgraph/([a-z_]+)/detail/ && ${BASH_REMATCH[1]} != "$layer" ]]; then
      echo "$f:$line: includes ${BASH_REMATCH[1]}/detail/, private to ${BASH_REMATCH[1]}/"; bad=1
    fi
  done < <(grep -nE '#include\s*[<"]distgraph/[a-z_]+/' "$f")
  if [[ $(rank "$layer") -lt $(rank nn) && "$rel" != torch.hpp ]]; then
    if grep -nE '#include\s*[<"](torch|ATen|c10|caffe2)/' "$f"; then
      echo "$f: includes libtorch below the libtorch layers (nn/ and up)"; bad=1
    fi
  fi
done < <(find "$root/distgraph" -name '*.hpp' -print0)
if [[ "$(grep -cE '#include\s*[<"]distgraph/(nn|train|infer|tasks|gpu)/' "$root/distgraph/distgraph.hpp")" != 0 ]]; then
  echo "distgraph.hpp must not include the libtorch layers"; bad=1
fi
echo "checked $checked headers"
[[ $checked -gt 0 ]] || exit 1
exit $bad
