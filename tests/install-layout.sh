#!/usr/bin/env bash
# meson install: ferry and its man page by default; with -Dcompat_links=true
# also nc and virt-ssh-helper links to ferry in LIBEXECDIR/ferry, which run
# the personalities.  The man page renders without warnings and documents
# every option of ferry --help.
. "$(dirname "$0")/lib.sh"
need meson ninja
: "${FERRY_SOURCE_ROOT:?}" "${FERRY_BUILD_ROOT:?}"

# The default build, as the suite built it: no links.
meson install -C "$FERRY_BUILD_ROOT" --no-rebuild --destdir "$T/default" >/dev/null
prefix=$(meson introspect "$FERRY_BUILD_ROOT" --buildoptions |
         python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
[ -x "$T/default$prefix/bin/ferry" ] || fail "ferry not installed in $prefix/bin"
[ -f "$T/default$prefix/share/man/man1/ferry.1" ] || fail "ferry.1 not installed"
[ -z "$(find "$T/default" -name nc -o -name virt-ssh-helper)" ] || fail "links installed without -Dcompat_links"

# With the option, in a build of its own.
meson setup "$T/b" "$FERRY_SOURCE_ROOT" --prefix=/usr -Dcompat_links=true >/dev/null
ninja -C "$T/b" >/dev/null
meson install -C "$T/b" --no-rebuild --destdir "$T/dest" >/dev/null
for name in nc virt-ssh-helper; do
    assert_eq /usr/bin/ferry "$(readlink "$T/dest/usr/libexec/ferry/$name")" "$name link"
done
# Run the installed binary under the links' names.
ln -s "$T/dest/usr/bin/ferry" "$T/virt-ssh-helper"
assert_contains <("$T/virt-ssh-helper" -V) "virt-ssh-helper (ferry)" "installed virt-ssh-helper"

if command -v groff >/dev/null; then
    groff -man -Tascii -ww "$T/dest/usr/share/man/man1/ferry.1" 2>"$T/warn" |
        col -b > "$T/man.txt"
    [ ! -s "$T/warn" ] || fail "groff warnings: $(cat "$T/warn")"
    # Every option ferry --help lists is in the man page.
    for opt in $("$FERRY" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$opt" "$T/man.txt" || fail "ferry.1 does not document $opt"
    done
fi
