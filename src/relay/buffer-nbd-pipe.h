/* ferry: --nbd without copying payloads, a pipe buffer fed from a socket.
 *
 * The parser must see every header, but most bytes are payload it only
 * counts (NBD_CMD_READ replies, NBD_CMD_WRITE data).  A fill asks the
 * parser how many of the next bytes it need not see; a long enough stretch
 * is spliced into the pipe unseen and reported with nbd_framing_skip().
 * Otherwise the fill peeks at the next bytes (recv MSG_PEEK, the only copy
 * to user space) and shows them to the inspector while they still wait in
 * the socket; one splice then moves them together with the payload that
 * follows.  Drains splice from the pipe, so payloads never cross user
 * space, and bytes that break the rules never enter it.  Nothing can be
 * edited, so the read-only guard keeps the ring. */
#ifndef FERRY_BUFFER_NBD_PIPE_H
#define FERRY_BUFFER_NBD_PIPE_H

#include <stdbool.h>
#include <stdint.h>

#include "buffer.h"
#include "nbd-framing.h"

/* The most bytes one peek copies, and so the shortest stretch worth
 * splicing unseen: a shorter one is peeked at with the header after it. */
#define NBD_PEEK_SIZE 4096

/* An inspector parses the copy at @bytes of the @n bytes next in the
 * source, before they move, and returns false after a violation (they
 * never move).  At end of stream it is called with @n == 0. */
typedef bool (*buffer_nbd_pipe_inspect_fn) (void *data, uint8_t *bytes, size_t n);

/* A pipe sized to @size bytes (capped as buffer_pipe_new() caps it) for a
 * direction whose source reads from @src_fd; NULL when @src_fd is no
 * stream socket (only a socket can be peeked at) or no pipe can be made.
 * The destination must offer a splice fd. */
struct buffer *buffer_nbd_pipe_new (int src_fd, size_t size);

bool buffer_nbd_pipe_is (const struct buffer *b);

/* Fills consult @f's NBD stream @dir and show the bytes it must see to @fn. */
void buffer_nbd_pipe_set_inspector (struct buffer *b, struct nbd_framing *f,
                                    enum nbd_dir dir, buffer_nbd_pipe_inspect_fn fn,
                                    void *data);

#endif
