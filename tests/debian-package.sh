#!/usr/bin/env bash
# The Debian packages, as README's "Install" builds them (scripts/package.sh:
# dpkg-buildpackage on a copy of the source tree), then their contents and
# links (dpkg-deb -c), their dependencies, lintian, the unpacked ferry
# (dpkg -x) through a real 64 MiB tunnel, directly and as nc
# (debian/tests/tunnel); then every autopkgtest of debian/tests on the
# packages installed on this host (autopkgtest ... -- null, about a minute),
# each one PASS.  Without autopkgtest, the test is skipped after the rest.
. "$(dirname "$0")/lib.sh"
: "${FERRY_SOURCE_ROOT:?}" "${FERRY_BUILD_ROOT:?}"
command -v dpkg-buildpackage >/dev/null ||
    skip "dpkg-buildpackage is not installed (scripts/install-deps.sh installs dpkg-dev)"
need dpkg-deb socat sha256sum
command -v lintian >/dev/null || fail "lintian is not installed (scripts/install-deps.sh)"

# noddebs: no -dbgsym package to pack; the unit tests still run.
DEB_BUILD_OPTIONS="noddebs parallel=2" sh "$FERRY_SOURCE_ROOT/scripts/package.sh" "$T" \
    > "$T/build.log" 2>&1 || fail "scripts/package.sh failed: $(tail -30 "$T/build.log")"

src=$FERRY_SOURCE_ROOT
version=$(sed -n "s/^  version : '\([^']*\)',/\1/p" "$src/meson.build")
changelog_version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version)
assert_eq "$version" "$changelog_version" \
    "debian/changelog's version against meson.build's (scripts/bump-version.sh sets both)"
ferry_deb=$(echo "$T"/ferry_"$version"_*.deb)
compat_deb=$T/ferry-compat_${version}_all.deb
[ -f "$ferry_deb" ] && [ -f "$compat_deb" ] ||
    fail "packages not built: $(ls "$T")"
build_log=$T/ferry_${version}_$(dpkg-architecture -qDEB_HOST_ARCH).build
grep -q 'dpkg-buildpackage: info: binary-only upload' "$build_log" ||
    fail "scripts/package.sh left no build log beside the packages: $(ls "$T")"

# Paths (and link targets) of a package, one a line, without directories.
contents () { dpkg-deb -c "$1" | awk '$1 !~ /^d/ { $1 = $2 = $3 = $4 = $5 = ""; sub(/^ +/, ""); print }' | sort; }
contents "$ferry_deb" > "$T/ferry.list"
contents "$compat_deb" > "$T/compat.list"
for path in ./usr/bin/ferry ./usr/share/man/man1/ferry.1.gz \
            ./usr/share/doc/ferry/README.md.gz ./usr/share/doc/ferry/copyright \
            ./usr/share/doc/ferry/examples/ferry.socket \
            ./usr/share/doc/ferry/examples/ferry.service \
            ./usr/share/bash-completion/completions/ferry; do
    grep -qxF "$path" "$T/ferry.list" || fail "ferry package lacks $path: $(cat "$T/ferry.list")"
done
grep -qE '^\./usr/lib/[^/]+/ferry/ferry-nbd-stream\.so$' "$T/ferry.list" ||
    fail "ferry package lacks the stream mode's module: $(cat "$T/ferry.list")"
for name in nc virt-ssh-helper; do
    grep -qxF "./usr/libexec/ferry/$name -> ../../bin/ferry" "$T/compat.list" ||
        fail "ferry-compat lacks the link $name: $(cat "$T/compat.list")"
done
grep -qxF ./usr/share/doc/ferry-compat/README.Debian "$T/compat.list" ||
    fail "ferry-compat lacks README.Debian"
# Nothing takes over another package's names.
! grep -E '^\./usr/s?bin/' "$T/compat.list" || fail "ferry-compat installs into a PATH directory"
assert_eq ./usr/bin/ferry "$(grep -E '^\./(usr/)?s?bin/' "$T/ferry.list")" "ferry's programs"

# Only the shared libraries ferry links (${shlibs:Depends}).
dpkg-deb -f "$ferry_deb" Depends | tr ',' '\n' | sed 's/^ *//' > "$T/depends"
! grep -v '^lib' "$T/depends" || fail "ferry depends on more than its libraries: $(cat "$T/depends")"

# lintian, pedantic tags included: no error, no warning.
lintian --pedantic --info "$T"/ferry_"$version"_*.changes > "$T/lintian" 2>&1 || true
! grep -E '^[EW]: ' "$T/lintian" || fail "lintian: $(grep -E '^[EW]: ' "$T/lintian")"

mkdir "$T/root"
dpkg -x "$ferry_deb" "$T/root"
dpkg -x "$compat_deb" "$T/root"
assert_eq "ferry $version" "$("$T/root/usr/bin/ferry" --version)" "unpacked ferry --version"
assert_contains "$T/root/usr/share/doc/ferry/examples/ferry.service" \
    "ExecStart=/usr/bin/ferry " "the example unit runs the packaged ferry"
FERRY_ROOT=$T/root within 120 sh "$src/debian/tests/tunnel" > "$T/tunnel.log" 2>&1 ||
    fail "tunnel through the unpacked ferry: $(cat "$T/tunnel.log")"
assert_eq 2 "$(grep -c '^ok: 64 MiB both ways' "$T/tunnel.log")" "tunnels through ferry and nc"

# The autopkgtests, on this host (the null testbed): autopkgtest installs
# the packages and each test's Depends with apt, and runs the tests as root.
command -v autopkgtest >/dev/null ||
    skip "autopkgtest is not installed (scripts/install-deps.sh); the rest passed"
[ "$(id -u)" = 0 ] || fail "autopkgtest -- null installs the packages on this host: run as root"
# Undone at exit: the packages autopkgtest installed that were not there
# (one dpkg run: ferry-compat depends on ferry).
installed_here=
for p in ferry-compat ferry; do
    if dpkg-query -W -f='${Status}\n' "$p" 2>/dev/null | grep -q ' installed$'; then
        echo "note: $p was installed; autopkgtest leaves it at $version" >&2
    else
        installed_here="$installed_here $p"
    fi
done
[ -z "$installed_here" ] || cleanup_fn sh -c "dpkg --purge$installed_here > /dev/null"
# The source tree as package.sh copies it, without build directories
# (autopkgtest copies the whole tree into the testbed).
mkdir "$T/src"
sh "$src/scripts/copy-source-tree.sh" "$src" "$T/src"
# In a network namespace of its own, with only loopback: apt, which
# autopkgtest runs to install what the tests depend on (all there already,
# from install-deps.sh), must not reach the archive (no network beyond
# 127.0.0.1); the tests' own peers listen on 127.0.0.1.
rc=0
within 600 unshare --net sh -c 'ip link set lo up && exec "$@"' sh \
    autopkgtest --output-dir "$T/autopkgtest" "$T/src/" "$ferry_deb" "$compat_deb" \
    -- null > "$T/autopkgtest.log" 2>&1 || rc=$?
tests=$(sed -n 's/^Tests: *//p' "$src/debian/tests/control" | tr ' ' '\n' | sort)
summary=$T/autopkgtest/summary
passed=$(awk '$2 == "PASS" { print $1 }' "$summary" 2>/dev/null | sort)
[ "$rc" = 0 ] && [ "$passed" = "$tests" ] ||
    fail "autopkgtest exited $rc: $(cat "$summary" 2>/dev/null || tail -30 "$T/autopkgtest.log")"
echo "autopkgtest: $(echo $passed) PASS" >&2
