/* ferry: the zero-copy buffers, pipes that endpoints splice(2) through
 * (buffer-pipe.c).
 *
 * A direction whose source and destination both offer a splice fd moves
 * bytes without copying them to user space: straight across when either
 * end is a pipe, else source -> ferry's pipe -> destination.
 * Every splice is SPLICE_F_NONBLOCK and runs only after poll said the
 * endpoint is ready: a blocking splice from a socket into a pipe holds the
 * pipe's lock while it waits, and a request/reply exchange deadlocks. */
#ifndef FERRY_BUFFER_PIPE_H
#define FERRY_BUFFER_PIPE_H

#include <stddef.h>

#include <fcntl.h>

#include "buffer.h"

/* The flags of every splice that a pipe buffer makes (see above). */
#define PIPE_SPLICE_FLAGS (SPLICE_F_NONBLOCK | SPLICE_F_MOVE)

/* A pipe sized to @size bytes (capped at /proc/sys/fs/pipe-max-size), or
 * NULL with errno set when no pipe can be made. */
struct buffer *buffer_pipe_new (size_t size);

/* When @src_fd or @dst_fd is a pipe: a buffer that splices from one to
 * the other directly, that pipe being the storage.  Otherwise NULL. */
struct buffer *buffer_pipe_new_direct (int src_fd, int dst_fd, size_t size);

/* Grow the pipe @fd to hold @size bytes, capped at pipe-max-size; never
 * shrinks it.  Returns the pipe's capacity, or -1 with errno set when @fd
 * is not a pipe. */
long buffer_pipe_grow (int fd, size_t size);

/* The write end of pipe buffer @b's pipe, for a kind that fills the pipe
 * itself and counts what it put there (buffer-nbd-pipe.c). */
int buffer_pipe_write_fd (struct buffer *b);

#endif
