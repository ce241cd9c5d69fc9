# ferry: run test scenarios with ferry under the fault-injection shim
# (tests/fault-inject.c), for tests/fault-injection-*.sh; sourced after
# lib.sh.  The seed is fixed (FERRY_FAULT_SEED, default 1) so a failure
# can be run again.
: "${FERRY_FAULT_SHIM:?the fault-injection shim (meson test sets it)}"
[ -e "$FERRY_FAULT_SHIM" ] || skip "no fault-injection shim at $FERRY_FAULT_SHIM"
export FERRY_FAULT_SEED=${FERRY_FAULT_SEED:-1} FERRY_FAULT_LOG=$T/faults

# $T/ferry runs ferry with the shim preloaded, for ferry alone: not for
# the peers, nor for a shell in between.  An ASan runtime would insist on
# being first in the preload list.
cat > "$T/ferry" <<EOF2
#!/bin/sh
ASAN_OPTIONS=\${ASAN_OPTIONS:+\$ASAN_OPTIONS:}verify_asan_link_order=0 \\
LD_PRELOAD='$FERRY_FAULT_SHIM'\${LD_PRELOAD:+:\$LD_PRELOAD} exec '$FERRY' "\$@"
EOF2
chmod +x "$T/ferry"

# Run the scenarios tests/NAME.sh with ferry under the shim; each must pass
# (its own checks: checksums, exit codes, messages) or skip.  Fails unless
# faults were injected.
run_with_faults () {  # NAME...
    local name rc
    for name in "$@"; do
        FERRY=$T/ferry bash "$FERRY_SOURCE_ROOT/tests/$name.sh" > "$T/$name.log" 2>&1 && rc=0 || rc=$?
        case $rc in
        0)  echo "$name: passed under faults (seed $FERRY_FAULT_SEED)" ;;
        77) echo "$name: skipped ($(tail -1 "$T/$name.log"))" ;;
        *)  cat "$T/$name.log" >&2
            fail "$name failed under fault injection (exit $rc, FERRY_FAULT_SEED=$FERRY_FAULT_SEED)" ;;
        esac
    done
    [ -s "$T/faults" ] || fail "ferry never ran under the shim"
    awk '{ for (i = 1; i <= NF; i++) { split($i, kv, "="); if (kv[1] != "pid" && kv[1] != "seed") n[kv[1]] += kv[2] } }
         END { printf "faults injected: %d calls, eintr %d, eagain %d, short %d, enomem %d\n",
                      n["calls"], n["eintr"], n["eagain"], n["short"], n["enomem"] }' "$T/faults"
    awk '{ split($4, a, "="); split($5, b, "="); split($6, c, "="); f += a[2] + b[2] + c[2] } END { exit !(f > 0) }' \
        "$T/faults" || fail "no fault was injected"
}
