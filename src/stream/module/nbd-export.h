/* ferry: the stream module's exports (nbd-export.c): the connections to
 * one export on the glib main loop, and the commands issued on them.  An
 * export is an NBD server or a local file or block device, each kind
 * behind its ops (export-ops.h). */
#ifndef FERRY_NBD_EXPORT_H
#define FERRY_NBD_EXPORT_H

#ifdef FERRY_EXECUTABLE
#error "libnbd.h belongs to the stream module: ferry's executable must not include it"
#endif

#include <glib.h>
#include <libnbd.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "export-ops.h"
#include "nbd-stream.h"

/* One connection to the export, where commands are issued. */
struct nbd_conn {
  struct nbd_handle *nbd;     /* the NBD kind's libnbd handle; NULL for a file */
  GSource *source;            /* the NBD kind's, driving @nbd (nbd-aio-source.c) */
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
  const struct export_ops *ops;  /* its kind: nbd_export_ops or file_export_ops */
  void *kind;                 /* the kind's own state: the file kind's, or an
                                 image's qemu-nbd (image-server.h); NULL */
  const char *name;           /* the URI, the command or the path, for messages */
  struct nbd_conn conn[NBD_STREAM_MAX_CONNECTIONS];  /* the first n_conns */
  unsigned n_conns;           /* connections open: 1 for a command or a file */
  uint64_t size;              /* bytes */
  uint32_t request_size;      /* clamped to the server's limits */
  bool can_zero;              /* ops->zero works (else write zeros) */
  bool can_fast_zero;         /* the server zeroes fast (NBD) */
  bool can_flush;             /* ops->flush works */
  bool can_multi_conn;        /* one connection's flush makes every one's
                                 writes durable */
  bool has_map;               /* ops->block_status gives an allocation map */
  bool resizable;             /* ops->resize works: a regular file */
  char *created;              /* the path of the file that the open created,
                                 or NULL (nbd_export_remove_created) */
  dev_t created_dev;          /* that file's identity */
  ino_t created_ino;
  GError *lost;               /* the first connection failure, if any */
  bool *kicked;               /* set when a connection fails: the copy loop's
                                 kick flag (nbd_kick_source_new) */
};

void nbd_export_close (struct nbd_export *e);
/* Remove the file that the open created, if it did and it is still that
 * file, empty: a receiver that got no stream (its sender could not open
 * SRC, or a stop came first) leaves nothing behind, as cp opens SRC before
 * it creates DST.  Another stream of the same copy (--streams) may have
 * opened it since and, with its header, sized it: then it stays. */
void nbd_export_remove_created (struct nbd_export *e);
/* The connection with the fewest commands in flight. */
struct nbd_conn *nbd_export_pick (struct nbd_export *e);
/* Issue a read of @length bytes at @offset into @buf on the connection
 * with the fewest commands in flight, stored in *@conn before the read
 * is issued (@done, which must decrement its in_flight, may run from
 * inside this call: libnbd retires the command at once if the connection
 * dies as it goes out).  False, with *@conn NULL and *@error (an errno)
 * set, if the export refused it; then @done is not called. */
bool nbd_export_pread (struct nbd_export *e, uint8_t *buf, uint64_t length, uint64_t offset,
                       struct nbd_conn **conn, nbd_completion_callback done, int *error);
/* The completion of the struct nbd_command @data (a completion callback,
 * on the main loop and maybe with a libnbd handle locked, or a part of one): done, its errno,
 * one command less on its connection, and the owner kicked. */
int nbd_command_done (void *data, int *error);
/* The end of a copy that succeeded: shut down every NBD connection that is
 * still up (the receiver flushed them on the main loop before). */
void nbd_export_finish (struct nbd_export *e);
unsigned nbd_export_in_flight (const struct nbd_export *e);
/* A command's errno as a reason; the file kind's ENODATA is a file that
 * shrank under ferry (file-ops.c). */
const char *nbd_export_strerror (int error);

#endif
