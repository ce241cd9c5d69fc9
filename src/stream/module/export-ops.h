/* ferry: the kinds of export behind struct nbd_export (nbd-export.h), as
 * nbdcopy's struct rw_ops: an NBD server (nbd-ops.c: a URI or a
 * '[ CMD ARGS... ]' server command, on libnbd's AIO API) or a local
 * regular file or block device (file-ops.c, read and written by ferry
 * itself).  The copy loops see only nbd-export.h: they issue commands on
 * a connection (struct nbd_conn, whose in_flight they count) and get
 * libnbd's completion callbacks, which run on the main loop. */
#ifndef FERRY_EXPORT_OPS_H
#define FERRY_EXPORT_OPS_H

#ifdef FERRY_EXECUTABLE
#error "libnbd.h belongs to the stream module: ferry's executable must not include it"
#endif

#include <glib.h>
#include <libnbd.h>
#include <stdbool.h>
#include <stdint.h>

#include "nbd-stream.h"

struct nbd_export;
struct nbd_conn;

/* Each command is issued on the connection @c of @e and returns true, or
 * false with *@error (an errno) set if it was refused: then @done is not
 * called.  Otherwise @done (and a block status's @extent before it) runs
 * once, on the main loop: from libnbd's notify, with the handle locked
 * (the NBD kind, which may also retire it inside the call that issued
 * it), or from the file kind's completion source. */
struct export_ops {
  /* Open @name (a URI, "[" with @options->command, or a path) and fill in
   * @e: the size, the can_ and has_ flags, the request size and the
   * connections. */
  bool (*open) (struct nbd_export *e, const struct nbd_stream_options *options,
                const char *name, bool writing, GError **error);
  bool (*pread) (struct nbd_export *e, struct nbd_conn *c, void *buf, uint64_t count,
                 uint64_t offset, nbd_completion_callback done, int *error);
  bool (*pwrite) (struct nbd_export *e, struct nbd_conn *c, const void *buf, uint64_t count,
                  uint64_t offset, nbd_completion_callback done, int *error);
  /* Zeros, as a hole unless @allocate (--allocated). */
  bool (*zero) (struct nbd_export *e, struct nbd_conn *c, uint64_t count, uint64_t offset,
                bool allocate, nbd_completion_callback done, int *error);
  /* What was written on @c becomes durable. */
  bool (*flush) (struct nbd_export *e, struct nbd_conn *c, nbd_completion_callback done,
                 int *error);
  /* The allocation map of [@offset, @offset + @count) (only with
   * @e->has_map), as base:allocation's extents. */
  bool (*block_status) (struct nbd_export *e, struct nbd_conn *c, uint64_t count,
                        uint64_t offset, nbd_extent_callback extent,
                        nbd_completion_callback done, int *error);
  /* Make the export @size bytes (only with @e->resizable; else NULL). */
  bool (*resize) (struct nbd_export *e, uint64_t size, GError **error);
  /* The end of a copy that succeeded (the receiver flushed before), or
   * NULL: nothing to do. */
  void (*finish) (struct nbd_export *e);
  /* Release everything: no command's callback runs after it, and none
   * touches its buffer any more. */
  void (*close) (struct nbd_export *e);
};

extern const struct export_ops nbd_export_ops;
extern const struct export_ops file_export_ops;

/* For a kind's open: the request size, @wanted within @preferred and
 * @maximum (0: none) and libnbd's 64 MiB, in whole stream blocks. */
bool nbd_export_set_request_size (struct nbd_export *e, uint64_t wanted, int64_t preferred,
                                  int64_t maximum, GError **error);

#endif
