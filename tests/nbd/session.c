/* ferry tests: replaying record streams through the NBD parser. */
#include "session.h"

#include <string.h>

static bool
feed_piece (struct nbd_framing *f, enum nbd_dir dir, uint8_t *buf, size_t len,
            bool skip, GByteArray *out, GError **error)
{
  struct nbd_step step;
  size_t done = 0;

  for (;;) {
    uint64_t unseen = skip ? nbd_framing_opaque (f, dir) : 0;
    if (unseen > 0 && done < len) {
      size_t n = (size_t) MIN (unseen, (uint64_t) (len - done));
      nbd_framing_skip (f, dir, n);
      if (out)
        g_byte_array_append (out, buf + done, n);
      done += n;
      continue;
    }
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
record_next (const uint8_t *data, size_t len, size_t *pos, struct record *r)
{
  const uint8_t *p = data + *pos;

  if (*pos + 5 > len)
    return false;
  r->dir = p[0] & 1 ? NBD_S2C : NBD_C2S;
  r->len = (size_t) p[1] << 24 | p[2] << 16 | p[3] << 8 | p[4];
  r->len = MIN (r->len, len - *pos - 5);
  r->data = p + 5;
  *pos += 5 + r->len;
  return true;
}

GPtrArray *
capture_paths (void)
{
  const char *dir = g_getenv ("NBD_CAPTURES");
  g_autoptr (GDir) d = NULL;
  GPtrArray *paths;
  const char *name;

  if (dir == NULL || (d = g_dir_open (dir, 0, NULL)) == NULL) {
    g_test_skip ("NBD_CAPTURES not set");
    return NULL;
  }
  paths = g_ptr_array_new_with_free_func (g_free);
  while ((name = g_dir_read_name (d)) != NULL)
    g_ptr_array_add (paths, g_build_filename (dir, name, NULL));
  g_assert_cmpuint (paths->len, >, 0);
  return paths;
}

GBytes *
capture_load (const char *path, GByteArray *want[2])
{
  g_autofree char *contents = NULL;
  size_t len, pos = 0;
  struct record r;

  g_assert_true (g_file_get_contents (path, &contents, &len, NULL));
  while (record_next ((const uint8_t *) contents, len, &pos, &r))
    g_byte_array_append (want[r.dir], r.data, r.len);
  return g_bytes_new_take (g_steal_pointer (&contents), len);
}

bool
session_replay (struct nbd_framing *f, const uint8_t *data, size_t len, size_t chunk,
                bool skip, GByteArray *out[2], GError **error)
{
  size_t pos = 0;
  struct record r;

  while (record_next (data, len, &pos, &r)) {
    enum nbd_dir dir = r.dir;
    size_t rlen = r.len;
    /* The parser patches in place: work on a copy. */
    g_autofree uint8_t *copy = g_malloc (rlen + 1);
    memcpy (copy, r.data, rlen);
    for (size_t off = 0; off < rlen; off += chunk) {
      size_t n = MIN (chunk, rlen - off);
      if (!feed_piece (f, dir, copy + off, n, skip, out ? out[dir] : NULL, error))
        return false;
    }
    /* Let the other direction collect what is waiting for it. */
    if (!feed_piece (f, dir == NBD_C2S ? NBD_S2C : NBD_C2S, copy, 0, skip,
                     out ? out[dir == NBD_C2S ? NBD_S2C : NBD_C2S] : NULL, error))
      return false;
  }
  return true;
}
