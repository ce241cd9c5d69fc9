/* ferry: the allocation map of an export, or of a range of it, from
 * block status asked one window (NBD_STREAM_MAP_WINDOW) ahead of a reader
 * that moves through it in offset order (nbd-read-queue.c, for
 * nbd-send.c and nbd-block-digests.c), and what the reader does next:
 * read, or take a zero range without reading. */
#ifndef FERRY_NBD_MAP_H
#define FERRY_NBD_MAP_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "nbd-export.h"

struct nbd_extent {
  uint64_t offset, length;
  bool zero;                  /* reads as zeros (a hole, or allocated zeros) */
};

struct nbd_map {
  struct nbd_export *export;  /* block status goes on its first connection */
  GArray *extents;            /* struct nbd_extent, from block status, in order */
  guint first;                /* entries before it are behind the reader */
  uint64_t end;               /* the map covers [start, end) */
  uint64_t limit;             /* ... and stops at this offset (the range's end) */
  bool pending;               /* a block status is in flight */
  uint64_t asked;             /* its window's end */
  uint64_t *requests;         /* counts the block status commands issued */
  /* Called when a block status is done, on the main loop (with the
   * handle locked: defer the work), or failed at once; @error (owned by
   * the callee) NULL on success.  Its message names the export and the
   * offset. */
  void (*done) (void *data, GError *error);
  void *data;
};

/* Map [@start, @limit) of @e; without @e->has_map all of it is data. */
void nbd_map_init (struct nbd_map *m, struct nbd_export *e, uint64_t start, uint64_t limit,
                   uint64_t *requests, void (*done) (void *data, GError *error), void *data);
void nbd_map_clear (struct nbd_map *m);

/* What comes at @pos, where the reader is (never behind the previous
 * call's): a zero range (true), or a read (false) of *@length bytes, at
 * most a request (@m->export->request_size) and up to the first block that
 * may be all zero.  Ranges end on block boundaries, except at the export's
 * end.  *@length 0 means: wait for the map (a block status was asked);
 * also asks the next window ahead. */
bool nbd_map_next (struct nbd_map *m, uint64_t pos, uint64_t *length);
/* nbd_map_next for a reader that holds @in_flight bytes of reads: a read
 * is also *@length 0 while it would take them past @limit (unless none is
 * held), or while the export's connections have
 * NBD_STREAM_REQUESTS_PER_CONNECTION commands in flight each. */
bool nbd_map_next_read (struct nbd_map *m, uint64_t pos, uint64_t in_flight, uint64_t limit,
                        uint64_t *length);

#endif
