# Splits the ```cpp blocks of one Markdown document into translation units, following the
# conventions in check_snippets.sh. Variables: doc (the document's path, used in #line
# directives and messages), dir (output folder). Writes, in dir:
#   fragments.cpp        the fragments that need no libtorch, in document order
#   fragments_torch.cpp  every fragment, when one of them needs libtorch
#   program_<line>.cpp   each whole program (a block with `int main`); _torch before .cpp
#   manifest.tsv         one line per ```cpp block: first line, last line, kind, detail
# Structural mistakes are printed as `doc:line: message` and make the exit status 1.

function fail(line, msg) {
  printf "%s:%d: %s\n", doc, line, msg > "/dev/stderr"
  bad = 1
}

function trim(s) {
  sub(/^[ \t\r]+/, "", s)
  sub(/[ \t\r]+$/, "", s)
  return s
}

function manifest(kind, detail) {
  printf "%d\t%d\t%s\t%s\n", start + 1, NR - 1, kind, detail > (dir "/manifest.tsv")
}

function line_directive(i) { return "#line " (start + i) " \"" doc "\"\n" }

# Writes a translation unit of fragments: their includes, then one function whose body
# nests each fragment in a block inside the previous one (a fragment sees every name the
# fragments above it declared and may redeclare one).
function write_fragments(file, includes, bodies, opens,    closing, i) {
  printf "// Generated from %s by tests/docs/check_snippets.sh; do not edit.\n", doc > file
  printf "%s", includes > file
  printf "#line 1 \"%s (snippet wrapper)\"\n", doc > file
  print "[[maybe_unused]] static int doc_snippets(int argc, char** argv) {" > file
  printf "%s", bodies > file
  printf "#line 1 \"%s (end of the snippets)\"\n", doc > file
  closing = ""
  for (i = 0; i < opens; i++) closing = closing "}"
  print closing > file
  print "  return 0;\n}" > file
  close(file)
}

function close_block(    i, first, ninc, is_torch, is_program, includes, body, file, reason) {
  if (lang !~ /^(cpp|c\+\+|cxx)$/) {
    if (block_marker != "")
      fail(start - 1, "snippet marker before a ```" lang " block; only ```cpp blocks are snippets")
    return
  }
  if (block_marker ~ /^not compiled/) {
    reason = block_marker
    if (sub(/^not compiled \(/, "", reason) != 1 || sub(/\)$/, "", reason) != 1 || reason == "")
      fail(start - 1, "say why: <!-- snippet: not compiled (REASON) -->")
    manifest("not compiled", reason)
    return
  }
  if (block_marker != "") {
    manifest("lines of", block_marker)
    return
  }
  # Leading #include lines (between blank lines and comments) go to file scope.
  first = 0
  ninc = 0
  is_torch = 0
  is_program = 0
  includes = ""
  for (i = 1; i <= n; i++) {
    if (body_line[i] ~ /^[ \t]*#[ \t]*include/) {
      if (first) {
        fail(start + i, "#include after code; move it to the top of the snippet")
        body_line[i] = ""
        continue
      }
      includes = includes line_directive(i) body_line[i] "\n"
      if (body_line[i] ~ /distgraph\/torch\.hpp|distgraph\/(nn|train|infer|tasks|gpu)\/|[<"](torch|ATen|c10)\//)
        is_torch = 1
    } else if (!first && trim(body_line[i]) != "" && body_line[i] !~ /^[ \t]*\/\//) {
      first = i
    }
    if (body_line[i] ~ /(^|[^A-Za-z0-9_])int[ \t]+main[ \t]*\(/) is_program = 1
  }
  body = ""
  if (first) {
    body = line_directive(first)
    for (i = first; i <= n; i++) body = body body_line[i] "\n"
  }
  torch_note = is_torch ? ", libtorch" : ""
  if (is_program) {
    file = dir "/program_" (start + 1) (is_torch ? "_torch" : "") ".cpp"
    printf "// Generated from %s by tests/docs/check_snippets.sh; do not edit.\n", doc > file
    printf "%s%s", includes, body > file
    close(file)
    manifest("program" torch_note, file)
    return
  }
  all_includes = all_includes includes
  if (first) {
    all_bodies = all_bodies "{\n" body
    all_opens++
  }
  if (is_torch) {
    any_torch = 1
  } else {
    core_includes = core_includes includes
    if (first) {
      core_bodies = core_bodies "{\n" body
      core_opens++
    }
  }
  any_fragment = 1
  manifest("fragment" torch_note, "")
}

in_block {
  if ($0 ~ /^```[ \t]*$/) {
    in_block = 0
    close_block()
  } else {
    body_line[++n] = $0
  }
  next
}

marker != "" && NR == marker_line + 1 && !/^```/ {
  fail(marker_line, "a snippet marker must be the line right before a ```cpp block")
  marker = ""
}

/^<!--[ \t]*snippet/ {
  if ($0 !~ /^<!-- snippet: .+ -->[ \t]*$/) {
    fail(NR, "malformed marker; write <!-- snippet: not compiled (REASON) --> or <!-- snippet: PATH -->")
    next
  }
  marker = $0
  sub(/^<!-- snippet: /, "", marker)
  sub(/ -->[ \t]*$/, "", marker)
  marker_line = NR
  next
}

/^```/ {
  lang = trim(substr($0, 4))
  if (lang == "")
    fail(NR, "code block without a language; tag it (```cpp is compiled; ```sh, ```cmake, ```text are not)")
  block_marker = (marker != "" && marker_line == NR - 1) ? marker : ""
  marker = ""
  start = NR
  n = 0
  in_block = 1
  next
}

END {
  if (in_block) fail(start, "code block never closed")
  if (marker != "") fail(marker_line, "a snippet marker must be the line right before a ```cpp block")
  if (any_fragment && (core_opens || core_includes != ""))
    write_fragments(dir "/fragments.cpp", core_includes, core_bodies, core_opens)
  if (any_torch) write_fragments(dir "/fragments_torch.cpp", all_includes, all_bodies, all_opens)
  exit bad
}
