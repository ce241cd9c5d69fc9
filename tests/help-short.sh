#!/usr/bin/env bash
# ferry --help is short (under 50 lines) and shows every synopsis form;
# the rest stays reachable through --help-all and the --help-SECTION
# groups; the internal options stay hidden.  An unknown option is one
# line on stderr that ends with where to read the usage, exit 2.
. "$(dirname "$0")/lib.sh"
"$FERRY" --help > "$T/help"
lines=$(wc -l < "$T/help")
[ "$lines" -lt 50 ] || fail "ferry --help is $lines lines: $(cat "$T/help")"
for form in "ferry [OPTION...] ADDRESS " "ferry [OPTION...] HOST PORT " \
    "ferry [OPTION...] -l LISTEN " "ferry [OPTION...] -l LISTEN TARGET " \
    "ferry --compat=nc " "ferry --compat=virt-ssh-helper " "ferry --nbd [OPTION...] ADDRESS " \
    "ferry --nbd-send=SRC " "ferry --nbd-receive=DST " "--remote-nbd-receive=DST ssh://" \
    "ferry --nbd-digest=IMAGE " "ferry copy SRC DST " "ferry copy SRC [USER@]HOST:DST " \
    "ferry copy [USER@]HOST:SRC DST " "ferry digest IMAGE... " "ferry --help-all" "man ferry"; do
    assert_contains "$T/help" "$form" "--help's synopsis"
done
# Each group's --help-SECTION is named, and works.
for group in relay forward ssh nbd nbd-stream; do
    assert_contains "$T/help" "--help-$group" "--help names --help-$group"
    "$FERRY" "--help-$group" > "$T/group" || fail "--help-$group"
    [ -s "$T/group" ] || fail "--help-$group printed nothing"
done
# Every option is in --help-all; the internal ones are hidden everywhere.
"$FERRY" --help-all > "$T/all"
for option in --buffer-size --max-connections --remote-helper --stats-file --streams \
    --in-flight --quiet --verbose; do
    assert_contains "$T/all" "$option" "--help-all"
done
for hidden in --ranged --create-size --source-name; do
    grep -qF -- "$hidden" "$T/all" && fail "--help-all shows the internal $hidden"
done

# An unknown option, and other usage errors: one line, exit 2.
for args in "--foo" "--foo unix:$T/x" "-Z" "copy --foo a b" "-b" "unix:$T/a unix:$T/b"; do
    rc=0
    # shellcheck disable=SC2086
    "$FERRY" $args < /dev/null > "$T/out" 2> "$T/err" || rc=$?
    assert_eq 2 "$rc" "$args: exit code"
    assert_eq 1 "$(wc -l < "$T/err")" "$args: lines on stderr ($(cat "$T/err"))"
    assert_eq "" "$(cat "$T/out")" "$args: stdout"
    case $args in
    copy*) hint="; see 'ferry copy --help'" ;;
    *) hint="; see 'ferry --help'" ;;
    esac
    [[ $(cat "$T/err") == ferry:*"$hint" ]] || fail "$args: '$(cat "$T/err")' does not end in $hint"
done
assert_eq "ferry: Unknown option --foo; see 'ferry --help'" "$("$FERRY" --foo 2>&1)" "--foo"
exit 0
