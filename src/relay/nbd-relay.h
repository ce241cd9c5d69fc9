/* ferry: --nbd, the NBD parser wired into a relay's two buffers.
 *
 * Each direction's buffer gets an inspector that feeds the bytes it has
 * just read to the connection's parser (nbd-framing.c).  Where the source
 * is a socket and the destination can splice, the buffer is a pipe that
 * moves payloads without copying them (buffer-nbd-pipe.c); otherwise, and always
 * for --nbd-readonly, it is a ring, where the inspector applies the edits:
 * only --nbd-readonly drops or inserts anything.  Stats go to stderr or a
 * file at the end and every --stats-interval seconds. */
#ifndef FERRY_NBD_RELAY_H
#define FERRY_NBD_RELAY_H

#include <stdbool.h>

#include <glib.h>

#include "buffer.h"

struct nbd_config {
  bool enabled;               /* --nbd */
  bool readonly;              /* --nbd-readonly (implies enabled) */
  unsigned stats_interval;    /* seconds; 0 = only at the end */
  const char *stats_file;     /* append stats here instead of stderr; may be NULL */
  unsigned greeting_timeout;  /* seconds to wait for the server's greeting; 0 = forever */
};

/* Free bytes every ring needs beyond its size for the parser's inserts. */
#define NBD_RING_RESERVE 512

struct nbd_relay;

/* Watch @up (the NBD client's stream) and @down (the server's), both made by
 * buffer_choose() with --nbd (or rings with NBD_RING_RESERVE extra
 * bytes): their fills feed the parser, and the relay reaches it through
 * the buffers' watcher (buffer.h): the guard's replies, the violation
 * ("NBD protocol violation: ..."), the final stats.  Each buffer holds a
 * reference until it is freed.  @label prefixes every line.  @wake is
 * called when a timer found a violation (no greeting in time). */
struct nbd_relay *nbd_relay_new (const struct nbd_config *config, const char *label,
                                 struct buffer *up, struct buffer *down,
                                 GSourceFunc wake, void *wake_data);
void nbd_relay_unref (struct nbd_relay *nr);

/* The protocol violation seen, or NULL. */
const GError *nbd_relay_error (const struct nbd_relay *nr);

#endif
