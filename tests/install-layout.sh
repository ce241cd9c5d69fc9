#!/usr/bin/env bash
# meson install: ferry, its stream-mode module and its man page by default; with -Dcompat_links=true
# also nc and virt-ssh-helper links to ferry in LIBEXECDIR/ferry, which run
# the personalities.  The man page renders without warnings and documents
# every option of ferry --help-all.
. "$(dirname "$0")/lib.sh"
need meson ninja
: "${FERRY_SOURCE_ROOT:?}" "${FERRY_BUILD_ROOT:?}"

# The default build, as the suite built it: no links.
meson install -C "$FERRY_BUILD_ROOT" --no-rebuild --destdir "$T/default" >/dev/null
prefix=$(meson introspect "$FERRY_BUILD_ROOT" --buildoptions |
         python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="prefix"][0])')
[ -x "$T/default$prefix/bin/ferry" ] || fail "ferry not installed in $prefix/bin"
[ -f "$T/default$prefix/share/man/man1/ferry.1" ] || fail "ferry.1 not installed"
libdir=$(meson introspect "$FERRY_BUILD_ROOT" --buildoptions |
         python3 -c 'import json,sys; print([o["value"] for o in json.load(sys.stdin) if o["name"]=="libdir"][0])')
[ -f "$T/default$prefix/$libdir/ferry/ferry-nbd-stream.so" ] ||
    fail "the stream mode's module not installed in $prefix/$libdir/ferry: $(find "$T/default" -type f)"
[ -z "$(find "$T/default" -name nc -o -name virt-ssh-helper)" ] || fail "links installed without -Dcompat_links"

# Run the installed binary under a personality's name.
ln -s "$T/default$prefix/bin/ferry" "$T/virt-ssh-helper"
assert_contains <("$T/virt-ssh-helper" -V) "virt-ssh-helper (ferry)" "installed ferry as virt-ssh-helper"

# With the option: configured (nothing to compile for the links, which
# carry the install tag compat-links), then installed.
meson setup "$T/b" "$FERRY_SOURCE_ROOT" --prefix=/usr -Dcompat_links=true >/dev/null
# meson installs a link only where its target exists: the suite's binary
# stands in for the one the runtime tag would install.
install -D "$FERRY" "$T/dest/usr/bin/ferry"
meson install -C "$T/b" --no-rebuild --tags compat-links --destdir "$T/dest" >/dev/null
for name in nc virt-ssh-helper; do
    assert_eq /usr/bin/ferry "$(readlink "$T/dest/usr/libexec/ferry/$name")" "$name link"
done
assert_eq "nc virt-ssh-helper" "$(ls "$T/dest/usr/libexec/ferry" | xargs)" "links installed"

if command -v groff >/dev/null; then
    # No hyphenation, long lines: option names stay whole.
    groff -man -Tascii -ww -rHY=0 -rLL=200n "$T/default$prefix/share/man/man1/ferry.1" 2>"$T/warn" |
        col -b > "$T/man.txt"
    [ ! -s "$T/warn" ] || fail "groff warnings: $(cat "$T/warn")"
    # Every option ferry --help-all lists is in the man page.
    for opt in $("$FERRY" --help-all | grep -o -- '--[a-z][a-z-]*' | sort -u); do
        grep -q -- "$opt" "$T/man.txt" || fail "ferry.1 does not document $opt"
    done
fi
