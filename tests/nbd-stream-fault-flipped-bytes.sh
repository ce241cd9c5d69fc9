#!/usr/bin/env bash
# One flipped payload byte: the digest does not match (exit 22); one
# flipped record-header byte: its checksum does not match (exit 21).
. "$(dirname "$0")/lib.sh"
. "$(dirname "$0")/lib-nbd-stream.sh"
size=$((32 * 1024 * 1024))
serve src pattern size=$size
serve dst memory size=$size
"$FERRY" --nbd-send="$(uri src)" > "$T/s.stream"
flip () {  # OFFSET: flip the low bit of the byte at OFFSET of the stream
    cp "$T/s.stream" "$T/bad.stream"
    python3 -c 'import sys
f = open(sys.argv[1], "r+b"); f.seek(int(sys.argv[2])); b = f.read(1)
f.seek(int(sys.argv[2])); f.write(bytes([b[0] ^ 1]))' "$T/bad.stream" "$1"
}
flip $((36 + 24 + 1000000))
set +e
"$FERRY" --nbd-receive="$(uri dst)" < "$T/bad.stream" 2> "$T/err"; rc=$?
set -e
assert_ferry_error 22 "$rc" "$T/err" "digest mismatch: the stream's END record says"
flip $((36 + 5))
set +e
"$FERRY" --nbd-receive="$(uri dst)" < "$T/bad.stream" 2> "$T/err"; rc=$?
set -e
assert_ferry_error 21 "$rc" "$T/err" "record header checksum mismatch (stream byte 36, export offset 0)"
# Unverified, the payload flip goes through.
flip $((36 + 24 + 1000000))
"$FERRY" --no-verify --nbd-receive="$(uri dst)" < "$T/bad.stream" || fail "--no-verify"
