#!/usr/bin/env bash
# Checks names that Markdown documents give against the code, only where that can be done
# without false alarms (names of other projects, placeholders and figure names look like
# ours, so a bare identifier is not checked):
# - every header a document names exists: a path under a folder of include/distgraph
#   (`runtime/initialize.hpp`, `distgraph/io/npy.hpp`, old paths forwarded from compat/)
#   or a bare file name (`dataset_stats.hpp`) found in the project's code;
# - every `Type::member` in backticks outside code blocks names a type the code declares
#   (class, struct or alias) and a member that a file declaring that type mentions.
# Prints DOC:LINE: what is wrong, for each, and exits 1 if there is any.
#
# Usage: check_identifiers.sh SOURCE_DIR DOC...   (DOC relative to SOURCE_DIR)
set -u
src=${1:?source dir}
shift
cd "$src" || exit 1
code=(include compat tools benchmarks examples tests)
# The folders of include/distgraph and of compat/distgraph (old paths): core|graph|...
layers=$(find include/distgraph compat/distgraph -mindepth 1 -maxdepth 1 -type d -printf '%f\n' |
           sort -u | paste -sd'|')
header_regex="(^|[^A-Za-z0-9_/.-])((distgraph/)?($layers)/[A-Za-z0-9_/]+|[A-Za-z0-9_]+)\.hpp"
bad=0

# $1 DOC, $2 LINE, $3 message.
report() {
  echo "$1:$2: $3"
  bad=1
}

# Headers: a layer path (optionally under distgraph/) or a bare name not under a folder.
check_headers() {
  local doc=$1 line tok path
  while IFS=: read -r line tok; do
    tok=${tok#[^A-Za-z0-9_]}
    path=${tok#distgraph/}
    if [[ $path == */* ]]; then
      [[ -e include/distgraph/$path || -e compat/distgraph/$path ]] ||
        report "$doc" "$line" "\`$tok\`: no such header in include/distgraph or compat/distgraph"
    elif [[ -z $(find "${code[@]}" -name "$path" -print -quit 2>/dev/null) ]]; then
      report "$doc" "$line" "\`$tok\`: no header of that name in ${code[*]}"
    fi
  done < <(grep -noE "$header_regex" "$doc")
}

# `Type::member` outside code blocks (the blocks are compiled by check_snippets.sh).
check_members() {
  local doc=$1 line q type member
  local -a files
  while IFS=: read -r line q; do
    type=${q%%::*}
    type=${type%%<*}
    member=${q##*::}
    mapfile -t files < <(grep -rlE "(class|struct|using) $type\b" include tools benchmarks examples)
    if ((${#files[@]} == 0)); then
      report "$doc" "$line" "\`$q\`: no class, struct or alias $type in the code"
    elif ! grep -qw -- "$member" "${files[@]}"; then
      report "$doc" "$line" "\`$q\`: $member is not in a file that declares $type"
    fi
  done < <(awk '/^```/ { in_code = !in_code; print ""; next } { print in_code ? "" : $0 }' "$doc" |
             grep -n -o "\`[^\`]*\`" |
             grep -oE '^[0-9]+:|[A-Z][A-Za-z0-9_]*(<[^>`]*>)?::[a-z_][A-Za-z0-9_]*' |
             awk '/^[0-9]+:$/ { line = $0; next } { print line $0 }' | sort -u)
}

for doc in "$@"; do
  check_headers "$doc"
  check_members "$doc"
done
((bad)) && echo "FAILED: a document names code that does not exist (above); see $0"
exit $bad
