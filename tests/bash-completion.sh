#!/usr/bin/env bash
# completion/ferry in bash with bash-completion loaded: the completions of a
# few partial command lines (the image commands and their images, HOST:
# from a fake ~/.ssh's config and known_hosts, options, option values, the
# stream mode's exports, each address form, --compat=nc's and
# --compat=virt-ssh-helper's command lines), every option of ferry --help-all
# offered, and never the internal ones.
. "$(dirname "$0")/lib.sh"
: "${FERRY_SOURCE_ROOT:?}"
bash_completion=/usr/share/bash-completion/bash_completion
[ -f "$bash_completion" ] || skip "bash-completion is not installed"

# The completions bash would offer for LINE (completed at its end), one a
# line, sorted: LINE is split into COMP_WORDS as readline splits it (at
# blanks, and around the word breaks ':' and '=', and '@' if it is one:
# bash drops it from COMP_WORDBREAKS with shopt -u hostcomplete, which
# bash-completion sets).
cat > "$T/complete.bash" <<'SH'
. "$1"; . "$2"
line=$3
COMP_WORDS=()
breaks='=:'
[[ $COMP_WORDBREAKS == *@* ]] && breaks+=@
for token in $line; do
    while [[ -n $token ]]; do
        [[ $token =~ ^([$breaks]+|[^$breaks]+) ]]
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
# In $T/cwd (its only file: ferry-local.img); hosts only from the fake
# ~/.ssh, not /etc/hosts.
complete_line () {  # LINE
    (cd "$T/cwd" && HOME=$T/home COMP_KNOWN_HOSTS_WITH_HOSTFILE= \
        bash --norc --noprofile "$T/complete.bash" \
        "$bash_completion" "$FERRY_SOURCE_ROOT/completion/ferry" "$1" 9<"$T/fd-file")
}
assert_completes () {  # LINE EXPECTED...
    local line=$1; shift
    assert_eq "$(printf '%s\n' "$@" | sort)" "$(complete_line "$line")" "completions of '$line'"
}
assert_offers () {  # LINE WORD: WORD is among the completions
    complete_line "$1" | grep -qxF -- "$2" ||
        fail "completions of '$1' lack '$2': $(complete_line "$1" | xargs)"
}

mkdir -p "$T/home/.ssh" "$T/dir" "$T/cwd"
cat > "$T/home/.ssh/config" <<'CONFIG'
Host ferry-test-host ferry-two
    Port 2222
    Hostname ferry-hostname-line
Host ferry-wild-* ferry-q? !ferry-not
    User nobody
Host=ferry-eq
Host *
    User nobody
CONFIG
cat > "$T/home/.ssh/known_hosts" <<'KNOWN'
# ferry-comment
ferry-kh-plain ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFerryTestKey
ferry-kh-a,ferry-kh-b,192.0.2.7 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFerryTestKey
[ferry-kh-port]:2200 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFerryTestKey
[ferry-kh-22]:22 ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFerryTestKey
|1|ZmVycnktaGFzaGVkLXNhbHQ=|ZmVycnktaGFzaGVkLWhhc2g= ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFerryTestKey
@cert-authority ferry-ca.example ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFerryTestKey
ferry-pat* ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIFerryTestKey
KNOWN
: > "$T/fd-file" > "$T/dir/a.sock" > "$T/dir/ab.sock" > "$T/dir/b.sock" > "$T/cwd/ferry-local.img"

# The image commands come first; their images are paths or scp's HOST:.
assert_completes "ferry co" copy
assert_completes "ferry d" digest
assert_completes "ferry copy $T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_offers "ferry copy $T/dir/a.sock ferry-te" ferry-test-host:
# HOST: from ~/.ssh/config's Host lines (no patterns, no Hostname) and
# known_hosts (unhashed, no patterns or markers, [HOST]:PORT only for 22),
# beside the local files; [USER@]HOST: keeps USER@.
assert_completes "ferry copy ferry-" ferry-test-host: ferry-two: ferry-eq: ferry-kh-plain: \
    ferry-kh-a: ferry-kh-b: ferry-kh-22: ferry-local.img
assert_completes "ferry copy $T/dir/a.sock 192.0" 192.0.2.7:
assert_completes "ferry digest ferry-tw" ferry-two:
assert_completes "ferry copy root@ferry-te" root@ferry-test-host:
assert_completes "ferry copy ferry-local.img root@ferry-kh-" root@ferry-kh-plain: \
    root@ferry-kh-a: root@ferry-kh-b: root@ferry-kh-22:
for none in ferry-wild ferry-q ferry-not ferry-hostn ferry-kh-po ferry-ca ferry-pat ferry-comm; do
    assert_completes "ferry copy $none" ""
done
! complete_line "ferry digest " | grep -e '|' -e '\*' -e '^@' || fail "a hashed or pattern entry offered"
assert_completes "ferry digest --src-format=q" qcow2 qed
assert_completes "ferry --no-s" --no-shutdown --no-splice
assert_completes "ferry --comp" --compat= --compress
assert_completes "ferry --compat=" nc virt-ssh-helper
assert_completes "ferry --nbd-r" --nbd-readonly --nbd-receive=
assert_completes "ferry --progress=a" always auto
assert_completes "ferry --proxy=socks" socks4:// socks4a:// socks5://
assert_completes "ferry --stats=j" json json:
assert_completes "ferry --stats=json:$T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
# SOURCE, DEST and IMAGE: NBD URIs, '[', local files; the socket's PATH of
# nbd+unix:///?socket=PATH.
assert_completes "ferry --nbd-send=$T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_completes "ferry --nbd-receive $T/dir/b" "$T/dir/b.sock"
for opt in --nbd-send= --nbd-receive= --nbd-digest= "--nbd-send "; do
    assert_completes "ferry $opt" nbd:// "nbd+unix:///?socket=" "[" ferry-local.img
    assert_completes "ferry ${opt}nb" nbd:// "nbd+unix:///?socket="
done
assert_completes "ferry --nbd-digest=nbd+u" "nbd+unix:///?socket="
assert_completes "ferry --nbd-send=nbd+unix:" "///?socket="
assert_completes "ferry --nbd-receive=nbd+unix:///?so" "///?socket="
assert_completes "ferry --nbd-send=nbd+unix:///?socket=$T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_completes "ferry --nbd-receive nbd+unix:///?socket=$T/dir/" \
    "$T/dir/a.sock" "$T/dir/ab.sock" "$T/dir/b.sock"
assert_completes "ferry --nbd-send=[" "["
assert_completes "ferry --nbd-digest=nbd://ferry-test-host" ""
# '[ CMD ARGS... ]': a command, then its files (or ']'), then on as before.
assert_offers "ferry --nbd-send [ tru" true
assert_offers "ferry --nbd-receive=[ tru" true
assert_offers "ferry copy [ tru" true
assert_completes "ferry --nbd-send=[ qemu-nbd -f raw $T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_offers "ferry copy [ nbdkit memory " "]"
assert_completes "ferry copy [ nbdkit memory 1M ] ferry-tw" ferry-two:
assert_completes "ferry --nbd-send [ nbdkit memory 1M ] --nbd-r" --nbd-readonly --nbd-receive=
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

# --compat=nc: the nc personality's options (compat-nc.c), no value after
# -I -i -M -m -O -P -p -q -s -w -x, TOS keywords after -T, -X's protocols, a
# PATH after -U, a host first (known_hosts, not ssh aliases; not with -l), no
# port.
assert_completes "ferry --compat=nc -" -4 -6 -b -C -D -d -F -h -I -i -k -l -M -m -N -n -O -P -p \
    -q -r -s -T -U -u -v -w -X -x -z
assert_completes "ferry --compat=nc -T af4" af41 af42 af43
assert_completes "ferry --compat=nc -p " ""
assert_completes "ferry --compat=nc -X " 4 5 connect
assert_completes "ferry --compat=nc -x " ""
assert_completes "ferry --compat=nc -X 5 -x 127.0.0.1:1080 ferry-kh-pl" ferry-kh-plain
assert_completes "ferry --compat=nc -U $T/dir/a" "$T/dir/a.sock" "$T/dir/ab.sock"
assert_completes "ferry --compat=nc -N -q " ""
assert_completes "ferry --compat=nc -w " ""
assert_completes "ferry --compat=nc -q 0 ferry-kh-pl" ferry-kh-plain
assert_completes "ferry --compat=nc ferry-test-host " ""
assert_completes "ferry --compat=nc -l " ""
assert_completes "ferry --compat=virt-ssh-helper -" -r --readonly -V --version -h --help
assert_completes "ferry --compat=virt-ssh-helper -r qemu:///s" ///session ///system

# The internal options are never offered.
for partial in --ran --create --source; do
    assert_completes "ferry $partial" ""
    assert_completes "ferry copy $partial" ""
done

# Every option ferry --help-all lists is offered.
complete_line "ferry -" > "$T/options"
for opt in $("$FERRY" --help-all | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -qx -- "$opt=\?" "$T/options" || fail "completion does not offer $opt"
done
! grep -E -e '^--(ranged|create-size|source-name)' "$T/options" || fail "an internal option offered"
