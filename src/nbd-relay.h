/* ferry: --nbd, the NBD parser wired into a relay's two buffers.
 *
 * Each direction's buffer gets an inspector that feeds the bytes it has
 * just read to the connection's parser (nbd-framing.c).  Where the source
 * is a socket and the destination can splice, the buffer is a pipe that
 * moves payloads without copying them (nbd-pipe.c); otherwise, and always
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

/* The buffer of @size bytes for the direction @src -> @dst: an NBD pipe
 * when @splice (not --no-splice) and both ends allow, else a ring with
 * NBD_RING_RESERVE extra bytes. */
struct buffer *nbd_buffer_new (const struct nbd_config *config, bool splice,
                               struct endpoint *src, struct endpoint *dst, size_t size);

/* Attach to @up (client -> server) and @down (server -> client), both
 * made by nbd_buffer_new() (or rings with NBD_RING_RESERVE extra bytes).
 * @label prefixes every line.
 * @wake is called when a timer found a violation (no greeting in time). */
struct nbd_relay *nbd_relay_new (const struct nbd_config *config, const char *label,
                                 struct buffer *up, struct buffer *down,
                                 GSourceFunc wake, void *wake_data);
void nbd_relay_free (struct nbd_relay *nr);

/* Put replies the read-only guard owes the client into @down, when the
 * server's stream is between messages.  Call after every move of bytes. */
void nbd_relay_emit (struct nbd_relay *nr);

/* The protocol violation seen, or NULL: the relay must end with it. */
const GError *nbd_relay_error (const struct nbd_relay *nr);

/* Write the stats block (final: at the end of the connection). */
void nbd_relay_print_stats (struct nbd_relay *nr, bool final);

#endif
