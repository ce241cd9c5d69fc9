/* ferry tests: NBD byte streams as records of one direction each, and a
 * driver that feeds them to the parser and rebuilds what it forwards.
 *
 * Record file format (also the fuzz corpus format): repeated
 *   1 byte direction (0 = client -> server, 1 = server -> client)
 *   4 bytes big-endian length, then that many bytes. */
#ifndef FERRY_TEST_NBD_SESSION_H
#define FERRY_TEST_NBD_SESSION_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <glib.h>

#include "nbd-framing.h"

/* One record of a record stream. */
struct record {
  enum nbd_dir dir;
  const uint8_t *data;
  size_t len;
};

/* The record at *@pos in @data, advancing *@pos past it; false at the end.
 * A length that runs past the end is cut short. */
bool record_next (const uint8_t *data, size_t len, size_t *pos, struct record *r);

/* The capture files of real sessions in $NBD_CAPTURES, or NULL (with the
 * test marked skipped) when that is not set. */
GPtrArray *capture_paths (void);

/* The record stream in the capture file @path; each direction's bytes are
 * appended to @want[dir], as a relay must forward them. */
GBytes *capture_load (const char *path, GByteArray *want[2]);

/* Feed @data (a record stream) in pieces of at most @chunk bytes; with
 * @skip, the bytes nbd_framing_opaque() allows go by nbd_framing_skip()
 * instead, as an NBD pipe moves them.  The bytes the parser forwards for
 * each direction are appended to @out[dir] (either may be NULL).  Returns
 * false with the parser's error. */
bool session_replay (struct nbd_framing *f, const uint8_t *data, size_t len,
                     size_t chunk, bool skip, GByteArray *out[2], GError **error);

#endif
