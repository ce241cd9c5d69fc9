/* ferry tests: replaying record streams through the NBD parser. */
#include "session.h"

#include <string.h>

static bool
feed_piece (struct nbd_framing *f, enum nbd_dir dir, uint8_t *buf, size_t len,
            GByteArray *out, GError **error)
{
  struct nbd_step step;
  size_t done = 0;

  for (;;) {
    if (!nbd_framing_feed (f, dir, buf + done, len - done, 4 * NBD_MAX_INSERT, &step, error))
      return false;
    if (step.n == 0)
      return true;
    if (step.action == NBD_INSERT) {
      if (out)
        g_byte_array_append (out, step.insert, step.n);
      continue;
    }
    g_assert (step.n <= len - done);
    if (step.action == NBD_PASS && out)
      g_byte_array_append (out, buf + done, step.n);
    done += step.n;
  }
}

bool
session_replay (struct nbd_framing *f, const uint8_t *data, size_t len, size_t chunk,
                GByteArray *out[2], GError **error)
{
  size_t pos = 0;

  while (pos + 5 <= len) {
    enum nbd_dir dir = data[pos] & 1 ? NBD_S2C : NBD_C2S;
    size_t rlen = (size_t) data[pos + 1] << 24 | data[pos + 2] << 16 |
                  data[pos + 3] << 8 | data[pos + 4];
    pos += 5;
    rlen = MIN (rlen, len - pos);
    /* The parser patches in place: work on a copy. */
    g_autofree uint8_t *copy = g_malloc (rlen + 1);
    memcpy (copy, data + pos, rlen);
    for (size_t off = 0; off < rlen; off += chunk) {
      size_t n = MIN (chunk, rlen - off);
      if (!feed_piece (f, dir, copy + off, n, out ? out[dir] : NULL, error))
        return false;
    }
    /* Let the other direction collect what is waiting for it. */
    if (!feed_piece (f, dir == NBD_C2S ? NBD_S2C : NBD_C2S, copy, 0,
                     out ? out[dir == NBD_C2S ? NBD_S2C : NBD_C2S] : NULL, error))
      return false;
    pos += rlen;
  }
  return true;
}
