/* ferry: systemd socket activation (sd_listen_fds(3) without libsystemd).
 *
 * A service manager (systemd, or libnbd's "[ CMD ]" in nbdcopy and nbdinfo)
 * passes already-listening sockets as fds 3, 4, ... and says so in
 * LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES. */
#ifndef FERRY_SOCKET_ACTIVATION_H
#define FERRY_SOCKET_ACTIVATION_H

#include <glib.h>

#define SOCKET_ACTIVATION_FIRST_FD 3

struct socket_activation {
  int n_fds;                  /* fds SOCKET_ACTIVATION_FIRST_FD onwards; 0 = not activated */
  char **names;               /* n_fds names for messages: LISTEN_FDNAMES, else "fd:N" */
};

/* Read and unset LISTEN_PID, LISTEN_FDS and LISTEN_FDNAMES (always, so no
 * child inherits them).  The fds count only when LISTEN_PID is ferry's own
 * pid.  Returns false with a FERRY_EXIT_USAGE error if they are malformed. */
bool socket_activation_take (struct socket_activation *activation, GError **error);
void socket_activation_clear (struct socket_activation *activation);

#endif
