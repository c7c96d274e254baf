#!/usr/bin/env bash
# Fails, naming file and line, when a header includes a higher layer or libtorch outside
# train/ (Debian puts ATen/ on the default include path, so the compiler cannot catch it).
set -u
root=${1:?include dir}
rank() {
  case "$1" in
    core) echo 0 ;; graph|io|transport) echo 1 ;; partition|storage) echo 2 ;;
    sampling) echo 3 ;; server) echo 4 ;; distributed) echo 5 ;; loaders) echo 6 ;;
    runtime) echo 7 ;; train|gpu) echo 8 ;;
    dist) echo 6 ;;  # deprecated forwarding headers to distributed/ and loaders/
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
  done < <(grep -nE '#include\s*[<"]distgraph/[a-z_]+/' "$f")
  if [[ $layer != train && $layer != gpu && "$rel" != torch.hpp ]]; then
    if grep -nE '#include\s*[<"](torch|ATen|c10|caffe2)/' "$f"; then
      echo "$f: includes libtorch outside train/"; bad=1
    fi
  fi
done < <(find "$root/distgraph" -name '*.hpp' -print0)
if [[ "$(grep -cE '#include\s*[<"]distgraph/train/' "$root/distgraph/distgraph.hpp")" != 0 ]]; then
  echo "distgraph.hpp must not include train/"; bad=1
fi
echo "checked $checked headers"
[[ $checked -gt 0 ]] || exit 1
exit $bad
