/* ferry: the stream module's NBD exports (nbd-export.c): the connections
 * to one export on the glib main loop, and the commands issued on them. */
#ifndef FERRY_NBD_EXPORT_H
#define FERRY_NBD_EXPORT_H

#ifdef FERRY_EXECUTABLE
#error "libnbd.h belongs to the stream module: ferry's executable must not include it"
#endif

#include <glib.h>
#include <libnbd.h>
#include <stdbool.h>
#include <stdint.h>

#include "nbd-stream.h"

/* One libnbd connection on the glib main loop (nbd-aio-source.c). */
struct nbd_conn {
  struct nbd_handle *nbd;
  GSource *source;
  unsigned in_flight;         /* commands issued and not yet completed */
};

/* A command on one connection, as its completion records it. */
struct nbd_command {
  struct nbd_conn *conn;      /* where it went; its in_flight counts it */
  bool *kicked;               /* the owner's kick flag (nbd_kick_source_new) */
  bool done;                  /* it completed, or libnbd refused it */
  int error;                  /* its errno */
};

/* The connections to one export (nbd-export.c). */
struct nbd_export {
  const char *name;           /* the URI or the command, for messages */
  struct nbd_conn conn[NBD_STREAM_MAX_CONNECTIONS];
  unsigned n_conns;
  uint64_t size;
  uint32_t request_size;      /* clamped to the server's limits */
  bool can_zero, can_fast_zero, can_flush, has_map;
  GError *lost;               /* the first connection failure, if any */
  bool *kicked;               /* set when a connection fails: the copy loop's
                                 kick flag (nbd_kick_source_new) */
};

/* Open the export (more connections only with
 * multi-conn, never for a command), and set it up for the copy. */
bool nbd_export_open (struct nbd_export *e, const struct nbd_stream_options *options,
                      const char *uri, bool writing, GError **error);
void nbd_export_close (struct nbd_export *e);
/* The connection with the fewest commands in flight. */
struct nbd_conn *nbd_export_pick (struct nbd_export *e);
/* Issue a read of @length bytes at @offset into @buf on the connection
 * with the fewest commands in flight, stored in *@conn before the read
 * is issued (@done, which must decrement its in_flight, may run from
 * inside this call: libnbd retires the command at once if the connection
 * dies as it goes out).  False, with *@conn NULL and *@error (an errno)
 * set, if libnbd refused it; then @done is not called. */
bool nbd_export_pread (struct nbd_export *e, uint8_t *buf, uint64_t length, uint64_t offset,
                       struct nbd_conn **conn, nbd_completion_callback done, int *error);
/* The completion of the struct nbd_command @data (a libnbd completion
 * callback, with the handle locked, or a part of one): done, its errno,
 * one command less on its connection, and the owner kicked. */
int nbd_command_done (void *data, int *error);
/* Shut down every connection that is still up (the receiver flushed them
 * on the main loop before). */
void nbd_export_finish (struct nbd_export *e);
unsigned nbd_export_in_flight (const struct nbd_export *e);

#endif
