#!/usr/bin/env bash
# ferry built with ThreadSanitizer (-Db_sanitize=thread), running the
# forward scenarios (the ones with worker threads), each on both relay
# paths.  glib's GMutex, GCond and GAsyncQueue are futex-based and glib is
# not instrumented, so TSan cannot see the hand-offs between the main loop
# and the workers: tests/tsan.supp names them, each entry explained.
# Prints each scenario's result and the count of TSan reports outside the
# suppressions; exits non-zero unless all passed with none.
#   tests/tsan.sh [BUILD_DIR]     (default build-tsan)
. "$(dirname "$0")/lib-checker.sh"
build_ferry "${1:-$top/build-tsan}" -Db_sanitize=thread -Db_lundef=false

mkdir -p "$out/tsan"
export FERRY=$build/src/ferry FERRY_SANITIZER=thread \
    TSAN_OPTIONS="suppressions=$top/tests/tsan.supp:log_path=$out/tsan/ferry:halt_on_error=0:second_deadlock_stack=1"

run_both_paths forward-one-connection forward-tcp forward-16-clients-both-ways \
    forward-worker-threads forward-max-connections forward-sigterm-drain forward-drain-timeout \
    forward-exit-idle-time forward-failures-isolated forward-load

reports=$(cat "$out"/tsan/* 2>/dev/null | grep -c '^WARNING: ThreadSanitizer' || true)
echo "tsan: $reports reports outside tests/tsan.supp; $passed passed, $failed failed (logs in $out)"
[ "$failed" -eq 0 ] && [ "$reports" -eq 0 ]
