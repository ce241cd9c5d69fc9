#!/bin/sh
# Build ferry's Debian packages, ferry and ferry-compat (README, "Install"):
# installs what is missing (scripts/install-deps.sh), then runs
# dpkg-buildpackage -us -uc -b on a copy of the tree in a temporary
# directory, so that only the packages are written: into OUTDIR (default:
# the directory above the tree, where dpkg-buildpackage puts them), with
# the build's log beside them as ferry_VERSION_ARCH.build (as debuild and
# sbuild name it), kept when the build fails too.
#   scripts/package.sh [OUTDIR]
set -eu
top=$(cd "$(dirname "$0")/.." && pwd)
out=$(cd "${1:-$top/..}" && pwd)
sh "$top/scripts/install-deps.sh"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/ferry-package.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/ferry"
sh "$top/scripts/copy-source-tree.sh" "$top" "$tmp/ferry"

version=$(dpkg-parsechangelog -l "$tmp/ferry/debian/changelog" -S Version)
log=$out/ferry_${version#*:}_$(dpkg-architecture -qDEB_HOST_ARCH).build
if ! (cd "$tmp/ferry" && dpkg-buildpackage -us -uc -b) > "$log" 2>&1; then
    tail -40 "$log" >&2
    echo "package: dpkg-buildpackage failed; the whole log: $log" >&2
    exit 1
fi
echo "$log"
for f in "$tmp"/*.deb "$tmp"/*.changes "$tmp"/*.buildinfo; do
    mv "$f" "$out/"
    echo "$out/${f##*/}"
done
