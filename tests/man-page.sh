#!/usr/bin/env bash
# ferry(1) (doc/ferry.1) renders without a warning, through groff and
# through man at 80 columns; every long option that ferry --help-all names
# is in it; every option it documents (its OPTIONS section and each option
# entry, a .TP tag, elsewhere) is one that --help-all lists; and the hidden
# options between ferry's own halves (src/main.c's table entries without a
# help text) are in neither list.
. "$(dirname "$0")/lib.sh"
need groff man perl
page=$FERRY_SOURCE_ROOT/doc/ferry.1

groff -ww -z -man "$page" 2> "$T/groff.err" || fail "groff failed: $(cat "$T/groff.err")"
[ ! -s "$T/groff.err" ] || fail "groff -ww warns: $(cat "$T/groff.err")"
# man shows troff's warnings only when asked (--warnings, all of them: w).
MANWIDTH=80 MAN_DISABLE_SECCOMP=1 man --warnings=w -l "$page" > "$T/man.txt" 2> "$T/man.err" ||
    fail "man -l failed: $(cat "$T/man.err")"
[ ! -s "$T/man.err" ] || fail "man -l warns: $(cat "$T/man.err")"
grep -q '^EXIT STATUS' "$T/man.txt" || fail "man -l rendered no EXIT STATUS section"

# The page's text with its escapes undone: \- is -, and font changes
# (\fB, \fI, \fR, \fP) and \c go.
sed -e 's/\\-/-/g' -e 's/\\f[BIRP]//g' -e 's/\\c//g' "$page" > "$T/page.txt"
long_options () { grep -o -- '--[a-z][a-z0-9-]*[a-z0-9]' | sort -u; }

"$FERRY" --help-all > "$T/help" || fail "ferry --help-all exited $?"
long_options < "$T/help" > "$T/help-options"
[ -s "$T/help-options" ] || fail "no long option in ferry --help-all"

# The page's option list: its OPTIONS section, and the tag line after
# every .TP (the NBD stream mode's options are listed under that section).
{
    sed -n '/^\.SH OPTIONS/,/^\.SH /p' "$T/page.txt"
    sed -n '/^\.TP/{n;p}' "$T/page.txt"
} | long_options > "$T/page-options"

missing=0
while read -r opt; do
    grep -qE -- "(^|[^a-z0-9-])$opt([^a-z0-9-]|$)" "$T/page.txt" || {
        echo "ferry.1 does not document $opt (in ferry --help-all)" >&2
        missing=$((missing + 1))
    }
done < "$T/help-options"
while read -r opt; do
    grep -qxF -- "$opt" "$T/help-options" || {
        echo "ferry.1 lists $opt, which ferry --help-all does not" >&2
        missing=$((missing + 1))
    }
done < "$T/page-options"

# The hidden options: in option_table, an entry whose last field (help) is
# NULL.
perl -0ne 'print "--$1\n" while /\{\s*"([a-z][a-z0-9-]*)"[^{}]*?\bNULL\s*\}/g' \
    "$FERRY_SOURCE_ROOT/src/main.c" | sort -u > "$T/hidden"
[ -s "$T/hidden" ] || fail "found no hidden option in src/main.c's option table"
while read -r opt; do
    if grep -qxF -- "$opt" "$T/help-options"; then
        echo "ferry --help-all lists the hidden option $opt" >&2
        missing=$((missing + 1))
    fi
    if grep -qxF -- "$opt" "$T/page-options"; then
        echo "ferry.1's option list has the hidden option $opt" >&2
        missing=$((missing + 1))
    fi
done < "$T/hidden"
[ "$missing" -eq 0 ] || fail "$missing option(s) differ between ferry --help-all and ferry.1"
echo "ferry.1: $(wc -l < "$T/help-options") options of --help-all documented, $(wc -l < "$T/page-options") listed, $(wc -l < "$T/hidden") hidden"
