#!/bin/sh
# Set ferry's version everywhere at once: meson.build's project() (what
# --version prints), a new debian/changelog entry (the package's version)
# and the man page's header.
# tests/debian-package.sh fails when they differ.
#   scripts/bump-version.sh 0.2.0 "What changed."
set -eu
[ $# -eq 2 ] || { echo "usage: $0 VERSION CHANGE" >&2; exit 2; }
version=$1 change=$2
case $version in
*[!0-9.]*|.*|*.|'') echo "bump-version: '$version': expected digits and dots, e.g. 0.2.0" >&2; exit 2 ;;
esac
top=$(cd "$(dirname "$0")/.." && pwd)
sed -i "0,/^  version : '[^']*'/s//  version : '$version'/" "$top/meson.build"
grep -q "^  version : '$version'," "$top/meson.build" ||
    { echo "bump-version: no version line in meson.build" >&2; exit 1; }
sed -i "s/^\(\.TH FERRY 1 \"[^\"]*\" \"ferry \)[^\"]*\"/\1$version\"/" "$top/doc/ferry.1"
maintainer=$(sed -n 's/^Maintainer: //p' "$top/debian/control")
{
    printf 'ferry (%s) unstable; urgency=medium\n\n  * %s\n\n -- %s  %s\n\n' \
        "$version" "$change" "$maintainer" "$(date -R)"
    cat "$top/debian/changelog"
} > "$top/debian/changelog.new"
mv "$top/debian/changelog.new" "$top/debian/changelog"
echo "ferry $version: meson.build, debian/changelog, doc/ferry.1"
