/* ferry: which buffer a relay direction gets (see buffer-choose.h). */
#include <config.h>

#include "buffer-choose.h"

#include "buffer-nbd-pipe.h"
#include "buffer-pipe.h"
#include "buffer-ring.h"

/* The whole decision, for the direction @src -> @dst:
 *
 *  - The buffer holds at least --buffer-size bytes, more when the source
 *    needs bigger reads (ssh:// down, endpoint.read_buffer_min).
 *  - --nbd: the parser must see every header, and --nbd-readonly edits
 *    the stream (refused writes are dropped, replies inserted), which only
 *    bytes in memory allow.  So the guard always has a ring, with
 *    NBD_RING_RESERVE bytes more for its inserts.  Without the guard, a
 *    socket source and a destination that can splice get the NBD pipe,
 *    which peeks at headers and splices payloads unseen; anything else
 *    gets the ring.
 *  - Otherwise, when both ends can splice (sockets, pipes, regular files;
 *    not with --no-splice): straight across when one end is a pipe (that
 *    pipe is the buffer, as ferry's stdio under ssh), else through a pipe
 *    of ferry's own.
 *  - The ring in every other case, and when no pipe can be made (out of
 *    fds): it works with any endpoint. */
struct buffer *
buffer_choose (struct endpoint *src, struct endpoint *dst, size_t size, bool splice,
               const struct nbd_config *nbd)
{
  int src_fd = splice ? endpoint_splice_fd (src, false) : -1;
  int dst_fd = splice ? endpoint_splice_fd (dst, true) : -1;
  struct buffer *b = NULL;

  size = MAX (size, src->read_buffer_min);
  if (nbd->enabled) {
    if (!nbd->readonly && dst_fd >= 0)
      b = buffer_nbd_pipe_new (src_fd, size);
    return b ? b : buffer_ring_new (size + NBD_RING_RESERVE);
  }
  if (src_fd >= 0 && dst_fd >= 0) {
    b = buffer_pipe_new_direct (src_fd, dst_fd, size);
    if (b == NULL)
      b = buffer_pipe_new (size);
  }
  return b ? b : buffer_ring_new (size);
}

void
buffer_watch_both (struct buffer *up, struct buffer *down, const struct nbd_config *nbd,
                   const char *label, GSourceFunc wake, void *data)
{
  if (nbd->enabled)
    nbd_relay_unref (nbd_relay_new (nbd, label, up, down, wake, data));
}
