#!/usr/bin/env python3
"""Independent checks for the NBD stream tests (tests/lib-nbd-stream.sh).

  digest FILE SIZE    the block-hash digest of doc/nbd-stream.md, section 5,
                      of FILE's first SIZE bytes (holes found with SEEK_DATA
                      cost nothing)
  blocks FILE OFFSET LENGTH
                      the SHA-256 of each 64 KiB block of FILE's bytes
                      [OFFSET, OFFSET + LENGTH), one hex line each (the
                      last block may be short)
  holes SRC DST       nbdinfo --map --json maps of source and destination:
                      every 64 KiB block that reads as zero in SRC's map must
                      read as zero in DST's, and DST has no more data blocks
                      than SRC; prints "data_blocks=N"
  applied FILE BYTES  the export offset up to which the first BYTES of the
                      stored stream FILE hold whole DATA and ZERO records
                      (doc/nbd-stream.md, sections 2 and 3; CRCs unchecked)
"""
import hashlib
import json
import os
import sys

BLOCK = 65536


def block_digests(path, size, start=0):
    """The SHA-256 of each block of FILE's [start, size), start on a block."""
    zero_digest = hashlib.sha256(bytes(BLOCK)).digest()
    with open(path, "rb") as f:
        fd = f.fileno()
        pos = start
        while pos < size:
            try:
                data = os.lseek(fd, pos, os.SEEK_DATA)
            except OSError:
                data = size
            # Whole blocks of hole before the next data.
            while pos + BLOCK <= min(data, size):
                yield zero_digest
                pos += BLOCK
            if pos >= size:
                break
            f.seek(pos)
            block = f.read(min(BLOCK, size - pos))
            block += bytes(min(BLOCK, size - pos) - len(block))
            yield hashlib.sha256(block).digest()
            pos += len(block)


def digest(path, size):
    outer = hashlib.sha256()
    for d in block_digests(path, size):
        outer.update(d)
    outer.update(size.to_bytes(8, "little"))
    return outer.hexdigest()


def zero_blocks(path):
    """Blocks (index) wholly inside extents with the zero bit, and the count of all blocks."""
    zero = set()
    with open(path) as f:
        extents = json.load(f)
    end = max([e["offset"] + e["length"] for e in extents] or [0])
    for e in extents:
        start, stop = e["offset"], e["offset"] + e["length"]
        if e["type"] & 2:
            # The export's last block may be short.
            last = (stop + BLOCK - 1) // BLOCK if stop == end else stop // BLOCK
            zero.update(range((start + BLOCK - 1) // BLOCK, last))
    return zero, (end + BLOCK - 1) // BLOCK


def holes(src, dst):
    src_zero, n = zero_blocks(src)
    dst_zero, _ = zero_blocks(dst)
    missing = sorted(src_zero - dst_zero)
    if missing:
        sys.exit("destination has data where the source has none, first at offset %d "
                 "(%d blocks)" % (missing[0] * BLOCK, len(missing)))
    data_src, data_dst = n - len(src_zero), n - len(dst_zero & set(range(n)))
    if data_dst > data_src:
        sys.exit("destination has %d data blocks, source %d" % (data_dst, data_src))
    print("data_blocks=%d" % data_src)


def applied(path, nbytes):
    header, record = 36, 24
    end = 0
    with open(path, "rb") as f:
        pos = header
        while pos + record <= nbytes:
            f.seek(pos)
            h = f.read(record)
            kind = int.from_bytes(h[0:4], "big")
            offset, length = int.from_bytes(h[4:12], "big"), int.from_bytes(h[12:20], "big")
            pos += record + (length if kind == 1 else 0)
            if kind in (3, 9) or pos > nbytes:   # END, STOP
                break
            end = offset + length
    return end


if __name__ == "__main__":
    if sys.argv[1] == "digest":
        print(digest(sys.argv[2], int(sys.argv[3])))
    elif sys.argv[1] == "blocks":
        start, length = int(sys.argv[3]), int(sys.argv[4])
        for d in block_digests(sys.argv[2], start + length, start):
            print(d.hex())
    elif sys.argv[1] == "holes":
        holes(sys.argv[2], sys.argv[3])
    elif sys.argv[1] == "applied":
        print(applied(sys.argv[2], int(sys.argv[3])))
    else:
        sys.exit(__doc__)
