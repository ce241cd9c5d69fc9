/* ferry: connecting to an address, giving a relay endpoint. */
#ifndef FERRY_CONNECT_H
#define FERRY_CONNECT_H

#include <stdbool.h>

#include <glib.h>

#include "address.h"
#include "endpoint.h"
#include "socket-options.h"

/* Returns a connected endpoint, or NULL with a FERRY_EXIT_CONNECT error
 * ("cannot connect to 'NAME': REASON"). */
struct endpoint *connect_address (const struct address *address,
                                  const struct connect_options *options,
                                  GError **error);

/* A target connected to again and again (listen-and-forward).  For an
 * ssh:// target, dialer_new authenticates one session, and every
 * dialer_connect opens a channel on it (a new session if it died). */
struct dialer;
/* @address and @options must outlive the dialer.  Errors as connect_address,
 * or ssh's host key and authentication codes. */
struct dialer *dialer_new (const struct address *address,
                           const struct connect_options *options, GError **error);
struct endpoint *dialer_connect (struct dialer *dialer, GError **error);
/* Whether dialer_connect and the endpoints it returns may be used on any
 * thread.  Not for ssh://: every channel shares the one libssh session,
 * which lives on the main loop. */
bool dialer_is_thread_safe (const struct dialer *dialer);
void dialer_free (struct dialer *dialer);

#endif
