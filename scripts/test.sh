#!/bin/sh
# Build ferry three times (the normal GSource release, the pre-glib-2.64
# deferred branch forced on, and ASan+UBSan with LeakSanitizer) and run the
# whole test suite against each.
# Ends with "N passed, N failed, N skipped" alone on a line; exits non-zero
# on any failure.
set -u
top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top" || exit 1
sh scripts/install-deps.sh || exit 1

passed=0 failed=0 skipped=0
for variant in default deferred-unref asan; do
    dir=build-test-$variant
    opt=
    [ "$variant" = deferred-unref ] && opt=-Dforce_deferred_unref=true
    # Issue 13: any sanitizer report fails its test (tests/meson.build,
    # tests/lib.sh); b_lundef=false as the sanitizer runtimes require.
    [ "$variant" = asan ] && opt="-Db_sanitize=address,undefined -Db_lundef=false"
    # shellcheck disable=SC2086
    if ! { [ -d "$dir" ] && meson setup --reconfigure --werror $opt "$dir" >/dev/null ||
           meson setup --werror $opt "$dir" >/dev/null; } ||
       ! ninja -C "$dir" >/dev/null; then
        echo "build ($variant) FAILED" >&2
        meson setup --werror $opt "$dir" 2>&1 | tail -20 >&2
        ninja -C "$dir" 2>&1 | tail -40 >&2
        failed=$((failed + 1))
        continue
    fi
    echo "== test suite, $variant build" >&2
    # Three at once where the tests mostly wait (keepalive timeouts, ssh
    # logins, sleeps to reach a state): the two cores were a quarter idle
    # at two.  The sanitizer build's tests keep the cores busy: two.
    jobs=3
    [ "$variant" = asan ] && jobs=2
    meson test -C "$dir" --print-errorlogs --num-processes $jobs >&2
    counts=$(python3 - "$dir/meson-logs/testlog.json" <<'PY'
import json, sys
c = {"OK": 0, "FAIL": 0, "SKIP": 0}
for line in open(sys.argv[1]):
    r = json.loads(line)["result"]
    c["OK" if r == "OK" else "SKIP" if r == "SKIP" else "FAIL"] += 1
print(c["OK"], c["FAIL"], c["SKIP"])
PY
) || counts="0 1 0"
    set -- $counts
    passed=$((passed + $1)) failed=$((failed + $2)) skipped=$((skipped + $3))
done

echo "$passed passed, $failed failed, $skipped skipped"
[ "$failed" -eq 0 ]
