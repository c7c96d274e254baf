#!/usr/bin/env bash
# Fails, naming file and line, when a line of a C++ source under include/, compat/, tools/,
# tests/, benchmarks/ or examples/ is over 100 columns (docs/STYLE.md; .clang-format's ColumnLimit).
# `clang-format -i --lines=N:N FILE` mends one line without reformatting the rest.
set -u
root=${1:?source dir}
cd "$root" || exit 1
files=$(find include compat tools tests benchmarks examples \
        -name '*.hpp' -o -name '*.cpp' -o -name '*.h' -o -name '*.cu' | sort)
[[ -n $files ]] || { echo "no sources under $root"; exit 1; }
# Counted in bytes where awk is mawk (Debian's default), so a line with a multi-byte
# character is held to a little less than 100 columns; gawk under C.UTF-8 counts columns.
long=$(LC_ALL=C.UTF-8 awk 'length($0) > 100 { print FILENAME ":" FNR ": " length($0) " columns" }' \
       $files)
if [[ -n $long ]]; then
  echo "$long"
  exit 1
fi
echo "$(wc -w <<<"$files") files, no line over 100 columns"
