/* ferry: what every personality's command line boils down to. */
#ifndef FERRY_OPTIONS_H
#define FERRY_OPTIONS_H

#include <stdbool.h>

#include "connect.h"
#include "relay.h"

#define FERRY_DEFAULT_BUFFER_SIZE (1024 * 1024)

struct ferry_options {
  const char *address;        /* where to connect, or with listen where to listen */
  bool listen;                /* accept connections on @address and relay them with stdio */
  bool keep_listening;        /* with listen: accept again after each connection */
  bool readonly;              /* a libvirt URI @address names the read-only socket */
  struct relay_config relay;
  struct connect_options connect;
};

void ferry_options_init (struct ferry_options *options);

/* Run the relay(s) the options describe; returns the exit code. */
int ferry_run (const struct ferry_options *options);

#endif
