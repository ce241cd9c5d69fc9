/* ferry: libFuzzer target over the NBD stream parser.
 *
 * Input: one byte of settings, then records as in tests/nbd/session.h
 * (the seed corpus is tests/nbd/captures/).  Settings bit 0 turns on the
 * read-only guard; bits 1-3 pick the piece size the bytes are fed in; bit
 * 4 skips what the parser need not see, as an NBD pipe does.
 * The parser must never crash, read or write out of bounds, or ask for
 * more than it may; protocol errors are fine. */
#include <stdint.h>
#include <stdlib.h>

#include "nbd-framing.h"
#include "session.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  static const size_t pieces[] = { 1, 2, 3, 5, 8, 13, 64, 4096 };
  struct nbd_framing *f;
  GByteArray *out[2];

  if (size < 1)
    return 0;
  f = nbd_framing_new (data[0] & 1);
  out[0] = g_byte_array_new ();
  out[1] = g_byte_array_new ();
  if (session_replay (f, data + 1, size - 1, pieces[(data[0] >> 1) % 8], data[0] & 16,
                      out, NULL)) {
    nbd_framing_eof (f, NBD_C2S, NULL);
    nbd_framing_eof (f, NBD_S2C, NULL);
  }
  /* Without the guard, nothing is ever added or removed. */
  if (!(data[0] & 1) && out[0]->len + out[1]->len > size)
    abort ();
  g_byte_array_unref (out[0]);
  g_byte_array_unref (out[1]);
  nbd_framing_free (f);
  return 0;
}
