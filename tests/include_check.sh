#!/bin/sh
# tests/include_check.sh [ROOT] - every project include of ROOT (default: this checkout) names its
# folder from the root (#include "trainer/loop/run.h", never a bare "run.h"), names a file that
# exists, and points into a folder its own folder may depend on: the "may depend on" column of
# ROOT/docs/architecture.md's folder table, read here so the table stays the one home of the rule.
# Prints one line per include that breaks it and exits 1; exits 0 with a summary line when none do.
set -u
root=$(cd "${1:-$(dirname "$0")/..}" && pwd)
table=$root/docs/architecture.md
[ -f "$table" ] || { echo "include_check: $table not found" >&2; exit 2; }

# "folder: allowed folders" per table row: the row's own folder and each project folder its last
# column names ("everything": all of them)
rules=$(awk -F'|' '
    /^\| `[a-z]+\/` \|/ {
        name = $2; gsub(/[ `\/]/, "", name); folders[++n] = name; deps[name] = $(NF - 1)
    }
    END {
        for (i = 1; i <= n; i++) {
            f = folders[i]; line = f ":" f
            for (j = 1; j <= n; j++)
                if (deps[f] ~ "everything" || deps[f] ~ ("(^|[ ,(])" folders[j] "([ ,)]|$)"))
                    line = line " " folders[j]
            print line
        }
    }' "$table")
[ -n "$rules" ] || { echo "include_check: no folder table in $table" >&2; exit 2; }

# every quoted include of a folder in the table, as FOLDER FILE NAME, one a line
list=$(mktemp)
trap 'rm -f "$list"' EXIT
for folder in $(echo "$rules" | cut -d: -f1); do
    [ -d "$root/$folder" ] || continue
    (cd "$root" && find "$folder" -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \) | sort |
        while read -r file; do
            sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([^"]*\)".*/\1/p' "$file" |
                sed "s|^|$folder $file |"
        done)
done >"$list"

bad=0 count=0
while read -r folder file name; do
    count=$((count + 1))
    allowed=" $(echo "$rules" | sed -n "s/^$folder://p") "
    case $name in
        */*) ;;
        *) echo "$file: #include \"$name\" names no folder (write it from the root: \"folder/$name\")"
           bad=1; continue ;;
    esac
    [ -f "$root/$name" ] || { echo "$file: #include \"$name\": no such file from the root"; bad=1; continue; }
    case $allowed in
        *" ${name%%/*} "*) ;;
        *) echo "$file: #include \"$name\": $folder/ may not depend on ${name%%/*}/ (docs/architecture.md:$allowed)"
           bad=1 ;;
    esac
done <"$list"
[ $bad = 0 ] && echo "[ OK ] includes: $count, each naming its folder, each allowed by docs/architecture.md"
exit $bad
