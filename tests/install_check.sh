#!/bin/sh
# tests/install_check.sh - `make install` into a scratch DESTDIR: every tool and its man page land,
# and `man TOOL` finds and renders each page (NAME and the tool's options, from its --help).
# Usage: tests/install_check.sh   (make test runs it; exit 0 when all holds)
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
dest=$(mktemp -d)
trap 'rm -rf "$dest"' EXIT
if ! make -C "$top" --no-print-directory -s install DESTDIR="$dest" PREFIX=/usr/local >"$dest.log" 2>&1; then
    cat "$dest.log"; rm -f "$dest.log"
    echo "[ FAILED ] make install"
    exit 1
fi
rm -f "$dest.log"
failed=0 tools=0
for path in "$dest"/usr/local/bin/*; do
    tool=${path##*/} tools=$((tools + 1))
    page=$(MANPATH="$dest/usr/local/share/man" man -w "$tool" 2>/dev/null)
    if [ "$page" != "$dest/usr/local/share/man/man1/$tool.1" ]; then
        echo "[ FAILED ] man -w $tool: \"$page\" (expected the installed $tool.1)"
        failed=1
        continue
    fi
    text=$(MANWIDTH=100 MANPATH="$dest/usr/local/share/man" man "$tool" 2>/dev/null)
    # the page holds the tool's own --help: its first option line must be in it
    option=$("$dest/usr/local/bin/$tool" --help | grep -o -- '--[a-z][a-z-]*' | head -n 1)
    case $text in
        *NAME*"$tool"*"$option"*) ;;
        *) echo "[ FAILED ] man $tool: no NAME line or no $option from its --help"; failed=1 ;;
    esac
done
# the tools built, and sbatch/sweep as dtrain-sweep (a link to it beside dtrain.sbatch, which it submits)
built=$(find "$top/build/bin" -maxdepth 1 -name 'dtrain*' -type f | wc -l)
[ "$tools" -eq $((built + 1)) ] ||
    { echo "[ FAILED ] make install put $tools programs in bin/, but $built tools were built (and dtrain-sweep)"; failed=1; }
share="$dest/usr/local/share/dtrain/sbatch"
if ! [ -x "$share/sweep" ] || ! [ -x "$share/dtrain.sbatch" ] ||
    [ "$(readlink -f "$dest/usr/local/bin/dtrain-sweep")" != "$share/sweep" ]; then
    echo "[ FAILED ] make install: sweep and dtrain.sbatch not side by side in share/dtrain/sbatch"
    failed=1
fi
text=$(MANWIDTH=100 MANPATH="$dest/usr/local/share/man" man dtrain.sbatch 2>/dev/null)
case $text in
    *NAME*dtrain.sbatch*DTRAIN_PROGRAM*) ;;
    *) echo "[ FAILED ] man dtrain.sbatch: no NAME line or no DTRAIN_PROGRAM from its --help"; failed=1 ;;
esac
[ $failed -eq 0 ] && echo "[ OK ] make install: $tools programs (the tools and dtrain-sweep) and dtrain.sbatch, a man page each; man finds and renders every one"
exit $failed
