#!/usr/bin/env bash
# The layout's rules (HACKING.md, "Layout"): no cycle and no edge back up in
# the include-and-call graph of src/, over the whole tree, inside every
# folder and between the folders (scripts/structure.py --check); and no
# source of ferry's executable includes libnbd.h, which belongs to the
# stream module.
. "$(dirname "$0")/lib.sh"
need python3
ctags --version 2>/dev/null | grep -q '^Universal Ctags' || skip "Universal Ctags is missing"
src=$FERRY_SOURCE_ROOT/src

python3 "$FERRY_SOURCE_ROOT/scripts/structure.py" --check "$src" > "$T/structure" ||
    fail "the layout's rules are broken: $(grep -E 'cycle|back up' "$T/structure" | head -5)"
grep -q '^src/: .* 0 back up, 0 cycles$' "$T/structure" || fail "unexpected: $(head -1 "$T/structure")"
grep -q '^folders: .* 0 back up, 0 cycles$' "$T/structure" ||
    fail "between the folders: $(grep '^folders' "$T/structure")"

found=$(grep -lE '^#[[:space:]]*include[[:space:]]*<libnbd\.h>' "$src"/*.[ch] "$src"/common/* "$src"/relay/* "$src"/transport/* \
        "$src"/stream/*.[ch] 2>/dev/null || true)
[ -z "$found" ] || fail "the executable's sources include libnbd.h: $found"
