/* ferry: which buffer a relay direction gets, and the watcher that --nbd
 * hooks into a relay's two buffers.  Knows every kind; the relay knows
 * only buffer.h and this. */
#ifndef FERRY_BUFFER_CHOOSE_H
#define FERRY_BUFFER_CHOOSE_H

#include <stdbool.h>
#include <stddef.h>

#include <glib.h>

#include "buffer.h"
#include "nbd-relay.h"

/* The buffer for the direction @src -> @dst, of at least @size bytes,
 * splicing where both ends allow it if @splice, and watched by --nbd's
 * parser when @nbd->enabled: the decision and its reasons are in
 * buffer-choose.c.  Never fails. */
struct buffer *buffer_choose (struct endpoint *src, struct endpoint *dst, size_t size,
                              bool splice, const struct nbd_config *nbd);

/* With @nbd->enabled, one NBD parser watches both directions, @up (the NBD
 * client's stream) and @down (the server's), both from buffer_choose();
 * @label prefixes its messages; @wake is called when one of its timers
 * found a violation.  Otherwise nothing. */
void buffer_watch_both (struct buffer *up, struct buffer *down, const struct nbd_config *nbd,
                        const char *label, GSourceFunc wake, void *data);

#endif
