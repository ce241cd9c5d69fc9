#!/usr/bin/env python3
"""A forged peer for the ranged stream of --streams (doc/nbd-stream.md,
section 8), to check that each side validates what the other claims.

  sender-peer CASE FERRY ARGS...   run FERRY ARGS... (--nbd-send=SRC --ranged)
                      and play its receiver: READY, then as CASE says:
                      bad-digests (a flipped block digest in the answer),
                      ready-length (a READY of length 1),
                      unaligned (a request off the block size),
                      outside (a request past the export's end),
                      delta-short (with --delta: DEST's digests of one
                      block fewer than the range has),
                      delta-stop (with --delta: SIGTERM while the sender
                      waits for DEST's digests; nothing more may come),
                      stop (SIGTERM while the sender waits for the answer)
  stream CASE SIZE    write a forged ranged stream for an export of SIZE
                      bytes to stdout: order (a DATA record that skips the
                      range's first block), bad-digest (a RANGE_END whose
                      digest is not its data's), end-digest (an END with a
                      digest), good (a valid one);
                      delta streams (the DELTA flag): delta-outside (a SAME
                      record past the range), delta-good (a range of SAME
                      only, for a destination that holds good's data),
                      delta-v1 (a version 1 stream with DELTA and a SAME);
                      big-record (a valid version 1 stream whose image
                      is one DATA record of SIZE bytes);
                      compressed version 1 streams (the COMPRESS flag) of
                      a DATA block, then a CDATA record of SIZE bytes,
                      its frames made by the zstd program: cdata-good
                      (they hold the record's bytes), cdata-more (twice
                      as many), cdata-more-sized (the same, with the
                      frame's content size), cdata-less (half as many),
                      cdata-bomb (256 MiB of zeros), cdata-garbage (not
                      zstd), cdata-size (a compressed size of SIZE),
                      cdata-noflag (without the COMPRESS flag),
                      unknown-flag (flag bit 3, and nothing else)
  remote-receiver CASE LOG  play a remote ferry --nbd-receive=DST --ranged
                      on stdin and stdout, applying nothing: late-answers
                      (each range's DIGESTS only once two more ranges
                      began, or nothing came for 0.5 s; appends "held N",
                      the answers held past two ranges, to LOG),
                      answers-after-end (the same, but never on a quiet
                      input: the last answers only after END and the
                      input's end)
  remote-sender CASE SIZE   play a remote ferry --nbd-send=SRC --ranged of
                      an export of SIZE bytes on stdin and stdout: early-end
                      (END in answer to the first REQUEST, for a range)
Exits with FERRY's exit status (sender-peer)."""
import hashlib
import os
import select
import signal
import struct
import subprocess
import time
import sys

BLOCK = 65536
READY, REQUEST, DIGESTS = 8, 6, 7
STOP = 9
DATA, ZERO, END, RANGE, RANGE_END = 1, 2, 3, 4, 5
SAME, CDATA = 16, 17
DIGEST_FLAG, DELTA_FLAG, COMPRESS_FLAG = 1, 2, 4


def crc32c_table():
    table = []
    for n in range(256):
        for _ in range(8):
            n = (n >> 1) ^ (0x82F63B78 & -(n & 1))
        table.append(n)
    return table


CRC32C_TABLE = crc32c_table()


def crc32c(data):
    crc = 0xFFFFFFFF
    for b in data:
        crc = (crc >> 8) ^ CRC32C_TABLE[(crc ^ b) & 0xFF]
    return crc ^ 0xFFFFFFFF


def record(kind, offset, length):
    head = struct.pack(">IQQ", kind, offset, length)
    return head + struct.pack(">I", crc32c(head))


def end_body(data_records, zero_records, data_bytes, zero_bytes, digest):
    body = struct.pack(">QQQQ", data_records, zero_records, data_bytes, zero_bytes) + digest
    return body + struct.pack(">I", crc32c(body))


def header(size, version=2, flags=DIGEST_FLAG):
    head = b"FERRYNBD" + struct.pack(">IIQII", version, flags, size, BLOCK, 0)
    return head + struct.pack(">I", crc32c(head))


def read_exact(f, n):
    data = b""
    while len(data) < n:
        piece = f.read(n - len(data))
        if not piece:
            raise EOFError
        data += piece
    return data


def block_digests(data):
    return [hashlib.sha256(data[i:i + BLOCK]).digest() for i in range(0, len(data), BLOCK)]


def sender_peer(case, argv):
    ferry = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    out, into = ferry.stdout, ferry.stdin
    size = struct.unpack(">Q", read_exact(out, 36)[16:24])[0]
    into.write(record(READY, 0, 1 if case == "ready-length" else 0))
    if case == "unaligned":
        into.write(record(REQUEST, 4096, BLOCK))
    elif case == "outside":
        into.write(record(REQUEST, size - BLOCK, 2 * BLOCK))
    else:
        into.write(record(REQUEST, 0, 16 * BLOCK))
    into.flush()
    if case in ("bad-digests", "stop"):
        kind, offset, length = struct.unpack(">IQQ", read_exact(out, 24)[:20])
        assert kind == RANGE and (offset, length) == (0, 16 * BLOCK), (kind, offset, length)
        image = bytearray(length)
        while True:
            kind, offset, length = struct.unpack(">IQQ", read_exact(out, 24)[:20])
            if kind == RANGE_END:
                read_exact(out, 68)
                break
            if kind == DATA:
                image[offset:offset + length] = read_exact(out, length)
        if case == "stop":
            ferry.send_signal(signal.SIGTERM)
            return ferry.wait(timeout=10)
        digests = block_digests(bytes(image))
        digests[1] = bytes(32)
        answer = b"".join(digests)
        into.write(record(DIGESTS, 0, len(answer)) + answer + struct.pack(">I", crc32c(answer)))
        into.flush()
    elif case == "delta-stop":
        kind, offset, length = struct.unpack(">IQQ", read_exact(out, 24)[:20])
        assert kind == RANGE, kind
        time.sleep(0.5)     # ferry waits for DEST's digests
        ferry.send_signal(signal.SIGTERM)
        # Only the STOP record, at the range's start, with SIGTERM's number.
        rest = out.read()
        assert len(rest) == 24, "%d bytes after the RANGE record" % len(rest)
        kind, offset, length = struct.unpack(">IQQ", rest[:20])
        assert (kind, offset, length) == (STOP, 0, signal.SIGTERM), (kind, offset, length)
        return ferry.wait(timeout=10)
    elif case == "delta-short":
        kind, offset, length = struct.unpack(">IQQ", read_exact(out, 24)[:20])
        assert kind == RANGE, kind
        digests = bytes(32 * 15)
        into.write(record(DIGESTS, 0, len(digests)) + digests + struct.pack(">I", crc32c(digests)))
        into.flush()
    try:
        into.close()
    except BrokenPipeError:
        pass
    out.read()
    return ferry.wait()


def big_record_stream(size):
    """One DATA record of the whole image, written a block at a time."""
    out = sys.stdout.buffer
    blocks = [bytes([i % 251]) * BLOCK for i in range(size // BLOCK)]
    digests = b"".join(hashlib.sha256(b).digest() for b in blocks)
    out.write(header(size, version=1) + record(DATA, 0, size))
    for b in blocks:
        out.write(b)
    digest = hashlib.sha256(digests + size.to_bytes(8, "little")).digest()
    out.write(record(END, size, 68) + end_body(1, 0, size, 0, digest))
    return 0


def zstd_frames(data, sized):
    """zstd's frames of DATA, from a pipe: with SIZED, the frame says
    its content size, else it does not (the size of a pipe is unknown)."""
    args = ["zstd", "-q", "-c"] + (["--stream-size=%d" % len(data)] if sized else [])
    return subprocess.run(args, input=data, stdout=subprocess.PIPE, check=True).stdout


def cdata_stream(case, size):
    """A DATA block, then a CDATA record of SIZE bytes, as CASE forges it."""
    data = bytes(range(256)) * (size // 256)
    if case == "cdata-bomb":
        packed = zstd_frames(bytes(256 * 1024 * 1024), False)
    elif case == "cdata-garbage":
        packed = bytes(range(7, 107))
    else:
        held = {"cdata-more": 2 * data, "cdata-more-sized": 2 * data,
                "cdata-less": data[:size // 2]}.get(case, data)
        packed = zstd_frames(held, case == "cdata-more-sized")
    packed_size = size if case == "cdata-size" else len(packed)
    first = bytes([1]) * BLOCK
    flags = DIGEST_FLAG | (0 if case == "cdata-noflag" else COMPRESS_FLAG)
    image = BLOCK + size
    digest = hashlib.sha256(b"".join(block_digests(first + data)) +
                            image.to_bytes(8, "little")).digest()
    if case == "unknown-flag":
        sys.stdout.buffer.write(header(image, version=1, flags=flags | 8))
        return 0
    trailer = struct.pack(">I", packed_size)
    s = header(image, version=1, flags=flags) + record(DATA, 0, BLOCK) + first
    s += record(CDATA, BLOCK, size) + trailer + struct.pack(">I", crc32c(trailer)) + packed
    s += record(END, image, 68) + end_body(2, 0, image, 0, digest)
    sys.stdout.buffer.write(s)
    return 0


def forged_stream(case, size):
    if case == "big-record":
        return big_record_stream(size)
    if case.startswith("cdata-") or case == "unknown-flag":
        return cdata_stream(case, size)
    length = 2 * BLOCK
    data = bytes(range(256)) * (length // 256)
    digest = hashlib.sha256(b"".join(block_digests(data)) + length.to_bytes(8, "little")).digest()
    if case == "delta-v1":
        s = header(size, version=1, flags=DIGEST_FLAG | DELTA_FLAG) + record(SAME, 0, BLOCK)
        sys.stdout.buffer.write(s)
        return 0
    if case.startswith("delta-"):
        s = header(size, flags=DIGEST_FLAG | DELTA_FLAG) + record(RANGE, 0, length)
        if case == "delta-outside":
            s += record(SAME, 0, 3 * BLOCK)
        elif case == "delta-stop":
            # Stopped while the receiver computes DEST's digests.
            s += record(STOP, 0, signal.SIGTERM)
        else:
            s += record(SAME, 0, BLOCK) + record(SAME, BLOCK, BLOCK)
            s += record(RANGE_END, length, 68) + end_body(0, 0, 0, 0, digest)
            s += record(END, size, 68) + end_body(0, 0, 0, 0, bytes(32))
        sys.stdout.buffer.write(s)
        return 0
    s = header(size) + record(RANGE, 0, length)
    if case == "order":
        s += record(DATA, BLOCK, BLOCK) + data[:BLOCK]
    else:
        s += record(DATA, 0, length) + data
        if case == "bad-digest":
            digest = bytes(32)
        s += record(RANGE_END, length, 68) + end_body(1, 0, length, 0, digest)
        # end-digest: END carries a digest, which only a version 1 END may.
        s += record(END, size, 68) + end_body(0, 0, 0, 0, digest if case == "end-digest" else bytes(32))
    sys.stdout.buffer.write(s)
    return 0


def remote_sender(case, size):
    out, into = sys.stdout.buffer, sys.stdin.buffer
    out.write(header(size))
    out.flush()
    read_exact(into, 24)    # READY
    read_exact(into, 24)    # REQUEST
    if case == "early-end":
        out.write(record(END, size, 68) + end_body(0, 0, 0, 0, bytes(32)))
    out.flush()
    return 0


class QuietInput:
    """A file descriptor read in exact pieces; @on_quiet runs each time
    nothing came for half a second."""

    def __init__(self, fd, on_quiet):
        self.fd, self.on_quiet, self.buf = fd, on_quiet, bytearray()

    def read(self, n):
        while len(self.buf) < n:
            if not select.select([self.fd], [], [], 0.5)[0]:
                self.on_quiet()
                continue
            piece = os.read(self.fd, 1 << 20)
            if not piece:
                raise EOFError
            self.buf += piece
        data = bytes(self.buf[:n])
        del self.buf[:n]
        return data


def remote_receiver(case, log):
    assert case in ("late-answers", "answers-after-end"), case
    out = sys.stdout.buffer
    zero_block = hashlib.sha256(bytes(BLOCK)).digest()
    pending = []      # ranges closed and not answered: [number, offset, digests]
    held = 0          # answers that waited until two more ranges began

    def answer(upto):
        while pending and pending[0][0] <= upto:
            _, offset, digests = pending.pop(0)
            body = b"".join(digests)
            out.write(record(DIGESTS, offset, len(body)) + body + struct.pack(">I", crc32c(body)))
        out.flush()

    quiet = (lambda: answer(float("inf"))) if case == "late-answers" else (lambda: None)
    into = QuietInput(sys.stdin.fileno(), quiet)
    into.read(36)     # the header
    out.write(record(READY, 0, 0))
    out.flush()
    begun, digests = 0, []
    while True:
        kind, offset, length = struct.unpack(">IQQ", into.read(24)[:20])
        if kind == RANGE:
            begun += 1
            held += sum(1 for p in pending if p[0] <= begun - 2)
            answer(begun - 2)
            digests, start = [], offset
        elif kind == DATA:
            digests += block_digests(into.read(length))
        elif kind == ZERO:
            digests += [zero_block if length - i >= BLOCK else
                        hashlib.sha256(bytes(length - i)).digest()
                        for i in range(0, length, BLOCK)]
        elif kind == RANGE_END:
            into.read(68)
            pending.append([begun, start, digests])
        elif kind == END:
            into.read(68)
            if case == "answers-after-end":
                try:
                    into.read(1)
                    raise SystemExit("a byte after END")
                except EOFError:
                    pass
            answer(float("inf"))
            break
    with open(log, "a") as f:
        f.write(f"held {held}\n")
    return 0


if __name__ == "__main__":
    if sys.argv[1] == "remote-receiver":
        sys.exit(remote_receiver(sys.argv[2], sys.argv[3]))
    if sys.argv[1] == "remote-sender":
        sys.exit(remote_sender(sys.argv[2], int(sys.argv[3])))
    if sys.argv[1] == "sender-peer":
        sys.exit(sender_peer(sys.argv[2], sys.argv[3:]))
    sys.exit(forged_stream(sys.argv[2], int(sys.argv[3])))
