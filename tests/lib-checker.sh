# ferry: shared by tests/valgrind.sh and tests/tsan.sh, which run test
# scenarios outside meson with ferry under a checker.  Not for the suite.
set -u
top=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
out=${FERRY_CHECK_DIR:-$(mktemp -d "${TMPDIR:-/tmp}/ferry-check.XXXXXX")}
mkdir -p "$out"
passed=0 failed=0

# Configure and build ferry in DIR with meson OPTIONS.
build_ferry () {  # DIR OPTIONS...
    local dir=$1; shift
    { [ -d "$dir" ] && meson setup --reconfigure "$@" "$dir" >/dev/null ||
      meson setup "$@" "$dir" >/dev/null; } && ninja -C "$dir" >/dev/null ||
        { echo "cannot build ferry in $dir" >&2; exit 1; }
    build=$(cd "$dir" && pwd)
}

# Run tests/NAME.sh with $FERRY (set by the caller) and ENV assignments.
run_scenario () {  # NAME ENV...
    local name=$1 rc; shift
    env FERRY_SOURCE_ROOT="$top" FERRY_BUILD_ROOT="$build" \
        FERRY_FAULT_SHIM="$build/tests/fault-inject.so" FERRY_LOAD_DRIVER="$build/tests/load-driver" \
        "$@" bash "$top/tests/$name.sh" > "$out/$name${suffix:-}.log" 2>&1 && rc=0 || rc=$?
    case $rc in
    0)  passed=$((passed + 1)); echo "ok    $name${suffix:-}" ;;
    77) echo "skip  $name${suffix:-}" ;;
    *)  failed=$((failed + 1)); echo "FAIL  $name${suffix:-} (exit $rc, $out/$name${suffix:-}.log)" ;;
    esac
}

# Each scenario on the splice path, then as NAME-copy on the copying path.
run_both_paths () {  # NAME...
    local name
    for name in "$@"; do
        suffix= run_scenario "$name"
        suffix=-copy run_scenario "$name" FERRY_NO_SPLICE=1
    done
}
