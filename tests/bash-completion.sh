#!/usr/bin/env bash
# completion/ferry in bash with bash-completion loaded: the completions of a
# few partial command lines (the image commands and their images, options,
# option values, each address form),
# and every option of ferry --help-all offered.
. "$(dirname "$0")/lib.sh"
: "${FERRY_SOURCE_ROOT:?}"
bash_completion=/usr/share/bash-completion/bash_completion
[ -f "$bash_completion" ] || skip "bash-completion is not installed"

# The completions bash would offer for LINE (completed at its end), one a
# line, sorted: LINE is split into COMP_WORDS as readline splits it (at
# blanks, and around the word breaks ':' and '=').
cat > "$T/complete.bash" <<'SH'
. "$1"; . "$2"
line=$3
COMP_WORDS=()
for token in $line; do
    while [[ -n $token ]]; do
        [[ $token =~ ^([=:]+|[^=:]+) ]]
        COMP_WORDS+=("${BASH_REMATCH[1]}")
        token=${token:${#BASH_REMATCH[1]}}
    done
done
[[ $line == *' ' ]] && COMP_WORDS+=('')
COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
COMP_LINE=$line COMP_POINT=${#line}
_ferry ferry "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD - 1]}"
printf '%s\n' "${COMPREPLY[@]}" | sort
SH
complete_line () {  # LINE
    HOME=$T/home bash --norc --noprofile "$T/complete.bash" \
        "$bash_completion" "$FERRY_SOURCE_ROOT/completion/ferry" "$1" 9<"$T/fd-file"
}
assert_completes () {  # LINE EXPECTED...
    local line=$1; shift
    assert_eq "$(printf '%s\n' "$@" | sort)" "$(complete_line "$line")" "completions of '$line'"
}
assert_offers () {  # LINE WORD: WORD is among the completions
    complete_line "$1" | grep -qxF -- "$2" ||
        fail "completions of '$1' lack '$2': $(complete_line "$1" | xargs)"
}

mkdir -p "$T/home/.ssh" "$T/dir"
printf 'Host ferry-test-host\n    Port 2222\n' > "$T/home/.ssh/config"
: > "$T/fd-file" > "$T/dir/a.sock" > "$T/dir/ab.sock" > "$T/dir/b.sock"

# The image commands come first; their images are paths or scp's HOST:.
assert_completes "ferry co" copy
assert_completes "ferry d" digest
assert_completes "ferry copy $T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_offers "ferry copy $T/dir/a.sock ferry-te" ferry-test-host:
assert_completes "ferry digest --src-format=q" qcow2 qed
assert_completes "ferry --no-s" --no-shutdown --no-splice
assert_completes "ferry --comp" --compat=
assert_completes "ferry --compat=" nc virt-ssh-helper
assert_completes "ferry --nbd-r" --nbd-readonly --nbd-receive=
assert_completes "ferry --progress=a" always auto
assert_completes "ferry --stats=j" json json:
assert_completes "ferry --stats=json:$T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
# SOURCE, DEST and IMAGE may be local files.
assert_completes "ferry --nbd-send=$T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_completes "ferry --nbd-receive $T/dir/b" "$T/dir/b.sock"
assert_completes "ferry --progress " unix: tcp: fd: ssh:// qemu:///system qemu:///session lxc:///system
assert_completes "ferry -b " 64K 256K 1M 4M 16M
assert_completes "ferry un" unix:
assert_completes "ferry -l ss" ssh://
# The part before the last ':' is on the command line already: bash shows
# what follows it.
assert_completes "ferry unix:$T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_completes "ferry qemu:///s" ///session ///system
assert_completes "ferry -r lxc://" ///system
assert_offers "ferry ssh://" //ferry-test-host/
assert_offers "ferry ssh://root@ferry-te" //root@ferry-test-host/
assert_offers "ferry tcp:ferry-te" ferry-test-host:
assert_offers "ferry fd:" 9
assert_completes "ferry ssh://ferry-test-host/var/" ""

# Every option ferry --help-all lists is offered.
complete_line "ferry -" > "$T/options"
for opt in $("$FERRY" --help-all | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -qx -- "$opt=\?" "$T/options" || fail "completion does not offer $opt"
done
