#!/bin/sh
# tests/shape_check.sh - the project's shape, held: README.md at most 150 lines, with no measured
# figure (they live in docs/PERFORMANCE.md); every relative link of README.md, docs/ and the
# folders' READMEs names a file that exists; no source file over 600 lines; no function outside
# tests/ over 80 lines; no --help of a tool says "seeds" (the reference experiments are named as
# such); every include names its folder and is allowed by docs/architecture.md
# (tests/include_check.sh, tried on planted bad includes too); the launcher loads no MPI or CUDA
# library; the exchange methods listed by dtrain-train --list-methods are the ones predict knows.
# Usage: tests/shape_check.sh BINDIR   (make test runs it; exit 0 when all holds)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
bin=$(cd "${1:?usage: shape_check.sh BINDIR}" && pwd)
cd "$top" || exit 1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
failed=0
fail() { echo "[ FAILED ] shape: $*"; failed=1; }

lines=$(wc -l < README.md)
[ "$lines" -le 150 ] || fail "README.md has $lines lines (at most 150: reference material goes to docs/)"
# README names no measured figure (a ratio 1.14x, a count "18 of 18"): each lives in one place,
# docs/PERFORMANCE.md or the study that made it, so README cannot fall behind them
grep -nE '[0-9]+\.[0-9]+[x×]|[0-9]+ of [0-9]+' README.md > "$tmp/figures" &&
    while read -r line; do fail "README.md:$line: a figure (it belongs in docs/PERFORMANCE.md)"; done < "$tmp/figures"

for doc in README.md docs/*.md docs/studies/*.md */README.md trainer/*/README.md; do
    [ -f "$doc" ] || continue
    dir=$(dirname "$doc")
    # [text](target): relative targets only, without their #anchor
    grep -o '](\([^)#:]*\)[)#]' "$doc" | sed 's/^](//; s/[)#]$//' > "$tmp/links"
    while read -r target; do
        [ -e "$dir/$target" ] || fail "$doc links to $target, which does not exist"
    done < "$tmp/links"
    rm -f "$tmp/links"
done

for f in $(git ls-files '*.c' '*.h' '*.cu'); do
    n=$(wc -l < "$f")
    [ "$n" -le 600 ] || echo "$f has $n lines (at most 600)" >> "$tmp/big"
    case $f in tests/*) continue ;; esac
    # a function: from a line that is "{" alone to the next "}" at the start of a line
    awk -v f="$f" '/^\{$/ { start = NR } /^\}/ && start { if (NR - start > 80) print f ":" start ": a function of " NR - start " lines"; start = 0 }' "$f"
done > "$tmp/long"
if [ -s "$tmp/big" ]; then
    while read -r line; do fail "$line"; done < "$tmp/big"
fi
if [ -s "$tmp/long" ]; then
    while read -r line; do fail "$line (at most 80)"; done < "$tmp/long"
fi
rm -f "$tmp/long"

for tool in "$bin"/dtrain*; do
    if "$tool" --help 2>&1 | grep -i 'seeds' >/dev/null; then
        fail "$(basename "$tool") --help says \"seeds\" (say what they are: the reference experiments)"
    fi
done
for c in table throughput plot predict timeline audit; do
    "$bin/dtrain-analyze" "$c" --help | grep -i 'seeds' >/dev/null && fail "dtrain-analyze $c --help says \"seeds\""
done

# Includes name their folder and follow docs/architecture.md's table; the check itself must catch
# a planted analysis -> trainer include and a bare one
sh tests/include_check.sh "$top" || fail "includes (above)"
mkdir -p "$tmp/planted/docs" "$tmp/planted/analysis" "$tmp/planted/trainer/loop"
cp docs/architecture.md "$tmp/planted/docs/"
: > "$tmp/planted/trainer/loop/run.h"
printf '#include "trainer/loop/run.h"\n' > "$tmp/planted/analysis/planted.c"
sh tests/include_check.sh "$tmp/planted" 2>&1 | grep -q 'analysis/planted.c: #include "trainer/loop/run.h": analysis/ may not' ||
    fail "include_check.sh let a planted analysis -> trainer include through"
printf '#include "run.h"\n' > "$tmp/planted/analysis/planted.c"
sh tests/include_check.sh "$tmp/planted" 2>&1 | grep -q 'analysis/planted.c: #include "run.h" names no folder' ||
    fail "include_check.sh let a bare include through"

# The launcher must start fast and run anything: it loads neither MPI nor CUDA (the build links
# every program against every library, --as-needed keeping only those used)
needed=$(readelf -d "$bin/dtrain" 2>/dev/null | sed -n 's/.*Shared library: \[\(.*\)\]/\1/p' | tr '\n' ' ')
case $needed in
    "") fail "readelf found no libraries of $bin/dtrain" ;;
    *libmpi*|*libcud*|*libnccl*|*libcublas*) fail "dtrain (the launcher) loads $needed: no MPI or CUDA" ;;
esac

methods=$("$bin/dtrain-train" --list-methods | tr '\n' ',' | sed 's/,$//')
"$bin/dtrain-analyze" predict --help | grep -F "Methods: $(echo "$methods" | sed 's/,/, /g')." >/dev/null ||
    fail "dtrain-analyze predict --help does not list dtrain-train --list-methods ($methods)"

# A static function's name says what it does in more than one word, so that grep finds it
# (follows, usual, cut were unfindable): none is a bare word (main aside)
git ls-files -z '*.c' '*.cu' '*.h' | xargs -0 grep -nE '^static [a-z_ *0-9]*[ *][a-z]+\(' | grep -v ' main(' >"$tmp/bare" &&
    while read -r line; do fail "$line: a bare-word static function name"; done <"$tmp/bare"

[ $failed -eq 0 ] && echo "[ OK ] shape: README $lines lines, docs' links resolve, files <= 600 lines, functions <= 80, no \"seeds\" in --help, includes by folder, a launcher without MPI or CUDA, one method list, no bare-word static function"
exit $failed
