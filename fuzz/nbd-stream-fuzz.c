/* ferry: libFuzzer target over the NBD stream parser
 * (src/stream/nbd-stream-format.c).
 *
 * Input: one byte that picks the piece size the rest is fed in, then a
 * stream (seeds: real streams from ferry --nbd-send, see
 * tests/nbd-stream-fuzz-smoke.sh).  The parser must never crash, read or
 * write out of bounds, hand out a piece outside the input or the export,
 * or consume more than it was given; errors are fine but must say where. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "nbd-stream-format.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const size_t pieces[] = { 1, 2, 3, 5, 24, 36, 4096, SIZE_MAX };
  struct stream_parser p;
  struct stream_event ev;
  size_t piece;

  if (size < 1)
    return 0;
  piece = pieces[data[0] % 8];
  data++, size--;
  stream_parser_init (&p);
  while (size > 0) {
    size_t n = size < piece ? size : piece;
    const uint8_t *chunk = data;
    data += n, size -= n;
    while (n > 0) {
      size_t used = stream_parser_feed (&p, chunk, n, &ev);
      if (used > n)
        abort ();
      if (ev.kind == STREAM_EVENT_DATA &&
          (ev.data < chunk || ev.data + ev.length != chunk + used ||
           ev.offset + ev.length > p.header.size))
        abort ();
      if (ev.kind == STREAM_EVENT_ZERO && ev.offset + ev.length > p.header.size)
        abort ();
      /* A CDATA piece: in the input, within its payload, which is smaller
       * than its record, which is within the export and the DATA bound. */
      if (ev.kind == STREAM_EVENT_CDATA &&
          (ev.data < chunk || ev.data + ev.length != chunk + used ||
           ev.offset + ev.length > ev.packed_length || ev.packed_length >= ev.record_length ||
           ev.record_length > STREAM_MAX_DATA ||
           ev.record_offset + ev.record_length > p.header.size))
        abort ();
      if (ev.kind == STREAM_EVENT_ERROR) {
        if (!strstr (p.error, "export offset"))
          abort ();
        return 0;
      }
      chunk += used, n -= used;
    }
  }
  if (!stream_parser_eof (&p) && !strstr (p.error, "truncated"))
    abort ();
  return 0;
}
