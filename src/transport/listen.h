/* ferry: listening sockets that hand accepted connections to a callback. */
#ifndef FERRY_LISTEN_H
#define FERRY_LISTEN_H

#include <glib.h>

#include "address.h"
#include "socket-options.h"

struct listener;

/* @fd is a new connected socket, set up by socket_setup(), owned by the
 * callee; @peer names it. */
typedef void (*listener_accept_fn) (int fd, const char *peer, void *data);

/* Bind and listen on @address (TCP: of @options->family), and start
 * accepting; accepted sockets get @options (which must outlive the
 * listener) through socket_setup().  A UNIX socket file
 * left behind by a dead listener is replaced; a live one is an error.
 * Returns NULL with a FERRY_EXIT_CONNECT error ("cannot listen on ..."). */
struct listener *listener_new (const struct address *address,
                               const struct connect_options *options,
                               listener_accept_fn accept_cb, void *data,
                               GError **error);

/* Accept on @fd, a socket already bound and listening (socket activation);
 * takes ownership of it on success.  @name is used in messages and peer names.
 * Returns NULL with a FERRY_EXIT_CONNECT error if @fd is not a listening
 * stream socket. */
struct listener *listener_new_from_fd (int fd, const char *name,
                                       const struct connect_options *options,
                                       listener_accept_fn accept_cb, void *data,
                                       GError **error);

/* Stop and restart accepting; new connections wait in the kernel backlog. */
void listener_pause (struct listener *listener);
void listener_resume (struct listener *listener);

/* Close the socket and remove the socket file it created. */
void listener_free (struct listener *listener);

typedef struct listener FerryListener;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (FerryListener, listener_free)

#endif
