#!/usr/bin/env bash
# Exec mode quotes the remote command once: a socket path with spaces,
# quotes, $(...) and ';' reaches the remote helper as one literal argument,
# and nothing in it runs.
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-sshd.sh"
need socat

start_sshd main /usr/bin:/bin
# Were any of it expanded or split, the helper's argument would differ.
dir="$T/a b'c\"d\$(echo x);e \`echo y\` & f|g \$HOME"
# socat cannot take such a path: the server listens in a plain directory
# that the hostile name is a symlink to.
mkdir "$T/plain"
ln -s "$T/plain" "$dir"
sock=$dir/s.sock
bg socat "UNIX-LISTEN:$T/plain/s.sock" EXEC:cat
wait_for_socket "$T/plain/s.sock"
# The helper records its arguments, then is ferry.
cat > "$T/helper" <<HELPER
#!/bin/sh
printf '%s\n' "\$#" > "$T/args"
printf '%s' "\$1" > "$T/arg1"
exec "$FERRY" "\$@"
HELPER
chmod +x "$T/helper"

out=$(echo ping | ferry_ssh --remote-helper="$T/helper" \
      "$(ssh_base)$sock?proxy=exec&keyfile=$SSH_KEY") || fail "ferry exited $?"
assert_eq ping "$out" "echo through the hostile path"
assert_eq 1 "$(cat "$T/args")" "argument count"
assert_eq "unix:$sock" "$(cat "$T/arg1")" "the argument"
