#!/usr/bin/env bash
# Fails, naming file and line, when a line of a C++ source under include/, tools/, tests/,
# benchmarks/ or examples/ is over 100 columns (docs/STYLE.md; .clang-format's ColumnLimit).
# `clang-format -i --lines=N:N FILE` mends one line without reformatting the rest.
set -u
root=${1:?source dir}
cd "$root" || exit 1
files=$(find include tools tests benchmarks examples \
        -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.cu' | sort)
[[ -n $files ]] || { echo "no sources under $root"; exit 1; }
# Columns, not bytes: a UTF-8 character is one column.
long=$(LC_ALL=C.UTF-8 awk 'length($0) > 100 { print FILENAME ":" FNR ": " length($0) " columns" }' \
       $files)
if [[ -n $long ]]; then
  echo "$long"
  exit 1
fi
echo "$(wc -w <<<"$files") files, no line over 100 columns"
