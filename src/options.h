/* ferry: what every personality's command line boils down to. */
#ifndef FERRY_OPTIONS_H
#define FERRY_OPTIONS_H

#include <stdbool.h>

#include "connect.h"
#include "nbd-stream.h"
#include "progress.h"
#include "relay.h"
#include "socket-activation.h"

#define FERRY_DEFAULT_BUFFER_SIZE (1024 * 1024)
#define FERRY_DEFAULT_NBD_GREETING_TIMEOUT 30
#define FERRY_DEFAULT_DRAIN_TIMEOUT 10

struct ferry_options {
  const char *address;        /* where to connect, or with listen where to listen;
                                 NULL when socket-activated */
  bool listen;                /* accept connections on @address (or the activation
                                 fds) and relay them with stdio, or with @target */
  bool keep_listening;        /* with listen: accept again after each connection */
  const char *target;         /* listen-and-forward: each accepted connection is
                                 relayed to its own new connection here; NULL
                                 relays with stdio */
  struct socket_activation activation;  /* fds to accept on instead of @address */
  unsigned max_connections;   /* forward: live relays at most; 0 = no limit */
  unsigned exit_idle_time;    /* forward: exit after SECS without connections; 0 = never */
  unsigned drain_timeout;     /* forward: on SIGTERM, SECS to finish buffered data */
  bool readonly;              /* a libvirt URI @address names the read-only socket */
  struct relay_config relay;
  struct progress_spec progress;  /* --progress: the stdio relay's live line,
                                   or the stream mode's */
  struct nbd_stream_options stream;  /* --nbd-send, --nbd-receive, --nbd-digest */
  struct connect_options connect;
};

#endif
