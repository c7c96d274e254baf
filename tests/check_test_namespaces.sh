#!/usr/bin/env bash
# Fails, naming the file, when a test file's body is not wrapped in its own namespace
# test_<folder>_<file>: a folder's files share one translation unit (tests/CMakeLists.txt), so
# two files' helpers of one name would collide, or worse, one would silently call the other's.
set -u
shopt -s nullglob
root=${1:?tests dir}
bad=0
checked=0
for f in "$root"/*/test_*.cpp; do
  folder=$(basename "$(dirname "$f")")
  file=$(basename "$f" .cpp)
  ns="test_${folder}_${file#test_}"
  checked=$((checked + 1))
  if ! grep -qxF "namespace $ns {" "$f" || ! grep -qxF "}  // namespace $ns" "$f"; then
    echo "$f: wrap the file's body (after its includes) in 'namespace $ns {' ... '}  // namespace $ns'"
    bad=1
  fi
  if [[ -n $(sed -n "/^namespace $ns {/,\$p" "$f" | grep -nE '^\s*#\s*include') ]]; then
    echo "$f: an #include inside namespace $ns"; bad=1
  fi
done
if ((checked == 0)); then
  echo "no test files under $root"; exit 1
fi
echo "$checked test files checked"
exit $bad
