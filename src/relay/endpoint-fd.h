/* ferry: endpoints over file descriptors (stdio, connected sockets). */
#ifndef FERRY_ENDPOINT_FD_H
#define FERRY_ENDPOINT_FD_H

#include "endpoint.h"

/* A connected socket, set up by socket_setup() (non-blocking); takes
 * ownership of @fd.  shutdown_write half-closes it. */
struct endpoint *endpoint_socket_new (int fd, const char *name);

/* ferry's own stdin and stdout.  shutdown_write closes stdout (fd 1 is
 * pointed at /dev/null so the number is not reused), unless @keep_stdout_open,
 * for listen -k, where later connections still write to it.  The fds'
 * original blocking mode is restored when the endpoint is freed.  Pipes
 * among them are grown to @pipe_size bytes where allowed (0: left alone). */
struct endpoint *endpoint_stdio_new (bool keep_stdout_open, size_t pipe_size);

#endif
