#!/usr/bin/env bash
# Compiles (-fsyntax-only) every ```cpp block of one Markdown document, naming the document
# and line of each block that fails, and lists the blocks it does not compile.
#
# Usage: check_snippets.sh SOURCE_DIR DOC OUT_DIR CXX FLAGS_RSP [TORCH_FLAGS_RSP]
#   DOC is relative to SOURCE_DIR (docs/GUIDE.md); the *.rsp files hold the flags of a
#   distgraph::distgraph (distgraph::torch) consumer, written by tests/docs/CMakeLists.txt.
#
# Conventions for document writers:
# - Every fenced block names its language; ```cpp blocks are snippets, the others
#   (```sh, ```cmake, ```text, ...) are not compiled.
# - A snippet's leading `#include` lines go to file scope; an #include after code is an error.
# - A snippet with `int main(` is a whole program and compiles as a translation unit of
#   its own. Any other snippet is a fragment: statements wrapped in a function body
#   (`int doc_snippets(int argc, char** argv)`). The fragments of a document compile in
#   order, each in a block nested inside the one before, so a fragment may use the names
#   that fragments above it declared (the document is read top to bottom) and may redeclare
#   them. Declarations that need namespace scope belong in a whole program.
# - A snippet needs libtorch when it includes distgraph/torch.hpp, distgraph/{nn,train,infer,tasks}/...,
#   torch/, ATen/ or c10/. Fragments that need no libtorch compile against
#   distgraph::distgraph; when some fragment needs libtorch, all of them compile again
#   against distgraph::torch, only where it exists (the listing says so otherwise).
# - The HTML comment on the line right before a block is its marker:
#     <!-- snippet: not compiled (REASON) -->  opts the block out; the listing shows it.
#     <!-- snippet: PATH -->                   the block is lines of PATH, a source file the
#                                              build compiles (tests/tools/test_docs.cpp
#                                              checks that every line is in PATH).
set -u
here=$(cd "$(dirname "$0")" && pwd)
src=${1:?source dir} doc=${2:?document} out=${3:?output dir} cxx=${4:?compiler}
flags=${5:?flags file} torch_flags=${6:-}
cd "$src" || exit 1
dir="$out/$(sed 's#/#_#g; s#\.md$##' <<<"$doc")"   # docs/GUIDE.md: OUT_DIR/docs_GUIDE
rm -rf "$dir" && mkdir -p "$dir" || exit 1

if ! awk -v doc="$doc" -v dir="$dir" -f "$here/extract_snippets.awk" "$doc"; then
  echo "FAILED: $doc breaks the snippet conventions (messages above; see $here/check_snippets.sh)"
  exit 1
fi
if [[ ! -s $dir/manifest.tsv ]]; then
  echo "$doc: no \`\`\`cpp blocks"
  exit 0
fi

bad=0
echo "$doc: C++ snippets (lines of the block, then what is checked)"
while IFS=$'\t' read -r first last kind detail; do
  where="  $doc:$first:"
  [[ $last != "$first" ]] && where="  $doc:$first-$last:"
  case $kind in
    fragment | program) echo "$where compiled ($kind)" ;;
    *libtorch)
      if [[ -n $torch_flags ]]; then
        echo "$where compiled against distgraph::torch (${kind%%,*} needing libtorch)"
      else
        echo "$where NOT COMPILED: needs libtorch, and this build has no distgraph::torch"
      fi
      ;;
    "lines of")
      echo "$where lines of $detail, which the build compiles (tests/tools/test_docs.cpp)"
      if [[ ! -f $detail ]]; then
        echo "$doc:$((first - 2)): the marker names $detail, which does not exist"
        bad=1
      fi
      ;;
    "not compiled") echo "$where NOT COMPILED ($detail): opted out by its marker" ;;
  esac
done <"$dir/manifest.tsv"

# Prints the blocks that the compiler's messages in log $1 point into.
name_failed_blocks() {
  awk -v doc="$doc" -F '\t' '
    NR == FNR {
      # Diagnostics located in the document ("in file included from" lines are not).
      if (index($0, doc ":") == 1 && match(substr($0, length(doc) + 2), /^[0-9]+:/))
        hit[substr($0, length(doc) + 2, RLENGTH - 1) + 0] = 1
      next
    }
    {
      lines = ""
      for (l in hit) if (l + 0 >= $1 && l + 0 <= $2) lines = lines " " l  # keys are strings
      if (lines != "")
        printf "FAILED: the snippet at %s:%d-%d does not compile (messages at lines%s)\n",
               doc, $1, $2, lines
    }' "$1" "$dir/manifest.tsv"
}

# Compiles translation unit $1 with the flags file $2.
compile() {
  local log="${1%.cpp}.log" t0=$SECONDS
  if "$cxx" @"$2" -fsyntax-only "$1" >"$log" 2>&1; then
    echo "ok: $(basename "$1") ($((SECONDS - t0)) s)"
  else
    cat "$log"
    echo "FAILED: $1 (generated from $doc) does not compile"
    name_failed_blocks "$log"
    bad=1
  fi
}

[[ -f $dir/fragments.cpp ]] && compile "$dir/fragments.cpp" "$flags"
if [[ -n $torch_flags && -f $dir/fragments_torch.cpp ]]; then
  if ((bad)); then
    echo "not compiled: fragments_torch.cpp (the same fragments and those needing libtorch)"
  else
    compile "$dir/fragments_torch.cpp" "$torch_flags"
  fi
fi
for p in "$dir"/program_*.cpp; do
  [[ -e $p ]] || continue
  if [[ $p == *_torch.cpp ]]; then
    [[ -n $torch_flags ]] && compile "$p" "$torch_flags"
  else
    compile "$p" "$flags"
  fi
done
exit $bad
