#!/bin/sh
# deps/install.sh - install the Debian packages of a list (default deps/packages.txt) that are
# missing. Silent when nothing is missing. Not root: prints the exact apt-get line and exits 1.
# Usage: deps/install.sh [LIST]
set -eu
list=${1:-"$(dirname "$0")/packages.txt"}
wanted=$(sed -e 's/#.*//' "$list" | tr -s ' \t' '\n' | grep -v '^$')
missing=""
for pkg in $wanted; do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
        *" installed") ;;
        *) missing="$missing $pkg" ;;
    esac
done
[ -z "$missing" ] && exit 0
line="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" -ne 0 ]; then
    echo "dtrain: missing Debian packages:$missing" >&2
    echo "dtrain: run as root:  apt-get update && $line" >&2
    exit 1
fi
echo "dtrain: installing$missing" >&2
export DEBIAN_FRONTEND=noninteractive
# Another apt (unattended upgrades, a second checkout) may hold the lock: wait for it.
apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
# shellcheck disable=SC2086  # $missing is a list of package names
apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends $missing >&2
