/* ferry: the ordered read queue of a pipelined reader of an export
 * (nbd-send.c, nbd-block-digests.c): reads issued as the allocation map
 * (nbd-map.h) says, up to a byte bound and spread over the connections,
 * that complete in any order and are held in offset order until the
 * reader takes each at the head.  A zero range from the map stands in the
 * queue unread.  Everything runs on the main loop; the completion
 * callbacks run inside libnbd with the handle locked, so they only record
 * and kick. */
#ifndef FERRY_NBD_READ_QUEUE_H
#define FERRY_NBD_READ_QUEUE_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd-map.h"
#include "nbd-export.h"
#include "buffer-arena.h"

struct nbd_read_queue;

/* One read, or one zero range found in the map.  A reader that keeps
 * more per read embeds it as the first member of its own struct
 * (@read_size, @clear). */
struct nbd_read {
  unsigned refs;              /* the queue's, and one per holder of @buf
                                 (a run being hashed) */
  uint64_t offset, length;
  uint8_t *buf;               /* NULL for a zero range from the map */
  void *piece;                /* @buf's place in the queue's arena, or NULL:
                                 from the heap */
  struct nbd_read_queue *queue;
  struct nbd_command io;      /* the read's completion (done at once for a
                                 zero range) */
};

struct nbd_read_queue {
  /* The reader's (nbd_read_queue_init). */
  struct nbd_export *export;
  uint64_t in_flight_limit;   /* bytes of reads held at most (one read
                                 always goes: nbd_map_next_read) */
  uint64_t *requests;         /* counts the NBD commands issued: reads and
                                 block status */
  bool *kicked;               /* set (atomically) when a read or a block
                                 status completes: the reader's pump */
  GError **failure;           /* the reader's first failure: no read is
                                 issued once it is set; a failed block
                                 status, or read at the head, goes there */
  size_t read_size;           /* a read's allocation: sizeof (struct
                                 nbd_read), or the reader's struct */
  void (*clear) (struct nbd_read *r);  /* frees what the reader added to
                                          @r, or NULL */

  /* The queue's. */
  struct buffer_arena arena;  /* the reads' buffers */
  struct nbd_map map;         /* of [next_offset, end) */
  uint64_t next_offset;       /* the next read or zero range starts here */
  uint64_t end;               /* and the range being read ends here */
  GQueue reads;               /* struct nbd_read, in offset order */
  uint64_t in_flight;         /* bytes of reads issued and not yet released
                                 (their last reference) */
  unsigned reads_in_flight;   /* reads issued and not yet completed */
};

/* An empty queue over no range (nbd_read_queue_range gives it one). */
void nbd_read_queue_init (struct nbd_read_queue *q, struct nbd_export *e,
                          uint64_t in_flight_limit, uint64_t *requests, bool *kicked,
                          GError **failure, size_t read_size,
                          void (*clear) (struct nbd_read *r));
/* Read [@start, @end) next, with a new map; the queue must be empty. */
void nbd_read_queue_range (struct nbd_read_queue *q, uint64_t start, uint64_t end);
/* Issue the reads (and take the zero ranges) that the map and the bounds
 * allow now, in order, unless *@q->failure is set. */
void nbd_read_queue_issue (struct nbd_read_queue *q);
/* The read at the head, once it is done and if it succeeded and no
 * failure was set; else NULL (a failed read's error, which names the
 * export and the range, becomes *@q->failure). */
struct nbd_read *nbd_read_queue_ready (struct nbd_read_queue *q);
/* Take the head off the queue and drop the queue's reference. */
void nbd_read_queue_pop (struct nbd_read_queue *q);
/* Drop a reference to a struct nbd_read (a blkhash release callback):
 * the last one frees the buffer and gives its bytes back to the bound. */
void nbd_read_unref (void *read);
/* Free the reads and the map: once no read is in flight, or after closing
 * the export (libnbd may retire reads into the buffers until then). */
void nbd_read_queue_clear (struct nbd_read_queue *q);

#endif
