#!/usr/bin/env bash
# ferry under valgrind (memcheck): the bulk, forward and --nbd scenarios,
# each on both relay paths, with ferry run as
#   valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99
# Prints each scenario's result, then the count of memcheck errors and of
# definitely lost bytes over every ferry process; exits non-zero unless all
# passed with 0 errors and 0 definite leaks.  Takes a few minutes.
#   tests/valgrind.sh [BUILD_DIR]     (default build-valgrind, a release build)
. "$(dirname "$0")/lib-checker.sh"
command -v valgrind >/dev/null || { echo "valgrind is not installed" >&2; exit 77; }
build_ferry "${1:-$top/build-valgrind}"

mkdir -p "$out/vg"
cat > "$out/ferry" <<EOF2
#!/bin/sh
exec valgrind --leak-check=full --errors-for-leak-kinds=definite --error-exitcode=99 \\
    --log-file='$out/vg/ferry.%p' '$build/src/ferry' "\$@"
EOF2
chmod +x "$out/ferry"
export FERRY=$out/ferry FERRY_SANITIZER=valgrind BULK_BYTES=$((32 * 1024 * 1024))

run_both_paths bulk-unix-up bulk-unix-down bulk-unix-both-ways bulk-tcp-up bulk-tcp-down \
    bulk-tcp-both-ways forward-one-connection forward-tcp forward-16-clients-both-ways \
    forward-sigterm-drain forward-worker-threads nbd-oldstyle nbd-no-sr nbd-qemu-img-convert \
    nbd-copy-sparse-random
run_scenario nbd-readonly-guard

processes=$(find "$out/vg" -type f | wc -l)
errors=$(cat "$out"/vg/* 2>/dev/null | awk '/ERROR SUMMARY:/ { n += $4 } END { print n + 0 }')
lost=$(cat "$out"/vg/* 2>/dev/null | awk '/definitely lost:/ { gsub(",", "", $4); n += $4 } END { print n + 0 }')
echo "valgrind: $processes ferry processes, $errors errors, $lost bytes definitely lost; $passed passed, $failed failed (logs in $out)"
[ "$failed" -eq 0 ] && [ "$errors" -eq 0 ] && [ "$lost" -eq 0 ]
