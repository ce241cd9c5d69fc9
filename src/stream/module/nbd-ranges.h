/* ferry: --streams, the ranges of one copy over several channels
 * (doc/nbd-stream.md, section 8).
 *
 * The remote mode's parent process is the controller: it cuts the image
 * into ranges and hands the next free one to whichever local half asks
 * (the messages, both ends: stream/range-messages.h).
 * A receiver reports a range once it applied it; a sender once it sent
 * it, with its own digests, and it checks the receiver's answer when that
 * comes (a difference fails the copy).  Either asks for the next range in
 * the same message.  The functions below are the module's (nbd-ranges.c);
 * what a half reads it takes from the main loop, never blocking. */
#ifndef FERRY_NBD_RANGES_H
#define FERRY_NBD_RANGES_H

#include <glib.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>

#include "nbd-stream-format.h"
#include "range-messages.h"

/* What a take (below) came to: the message read whole, a wait (a watch
 * on the fd sets the pump's *kicked once more can be read), or a failure
 * (in the GError). */
enum nbd_range_take { NBD_RANGE_TAKEN, NBD_RANGE_WAIT, NBD_RANGE_FAILED };

/* A reader of one fd that never blocks, on the main loop: the ranged
 * stream's return direction, whose messages may come in pieces, or the
 * controller's socket, a grant a packet.  The fd may block or not. */
struct nbd_range_input {
  int fd;
  bool *kicked;               /* the pump's (nbd_kick_source_new) */
  GSource *watch;             /* while the fd has nothing to read */
  uint8_t record[STREAM_RECORD_SIZE];  /* the message's record, as read */
  size_t record_have;         /* bytes of @record read */
  bool in_body;               /* DIGESTS: the record was checked, the
                                 digests and their CRC are being read */
  uint8_t *body;              /* them, @body_len bytes (kept for the next) */
  size_t body_len, body_have;
};

void nbd_range_input_init (struct nbd_range_input *in, int fd, bool *kicked);
/* The watch and the buffer go. */
void nbd_range_input_clear (struct nbd_range_input *in);

/* Report @done (@digests, @data_bytes, @same_bytes; NULL or index -1:
 * none) to the controller on @fd, asking for the next range, which
 * nbd_range_take_grant takes. */
bool nbd_range_send_report (int fd, uint64_t size, const struct nbd_range *done,
                            const uint8_t *digests, uint64_t data_bytes, uint64_t same_bytes,
                            GError **error);
/* The controller's grant on @control's fd: the next range in *@next
 * (index -1: none left). */
enum nbd_range_take nbd_range_take_grant (struct nbd_range_input *control,
                                          struct nbd_range *next, GError **error);

/* The other direction of a ranged stream's channel.  Its writes block
 * while the fd is full (the fds may be non-blocking); its reads are takes
 * from an input on it.  READY: the receiver took the header and opened
 * its export, and the sender may start (the first message on the return
 * direction). */
bool nbd_range_write_ready (int fd, GError **error);
enum nbd_range_take nbd_range_take_ready (struct nbd_range_input *in, GError **error);
/* A request for a range (length 0: no more), validated against @size
 * (inside, block-aligned, at most NBD_RANGE_MAX); index -1 for "no
 * more". */
bool nbd_range_write_request (int fd, const struct nbd_range *range, uint64_t size,
                              GError **error);
enum nbd_range_take nbd_range_take_request (struct nbd_range_input *in, uint64_t size,
                                            struct nbd_range *range, GError **error);
/* The block digests of @range (its block count's worth) that a receiver
 * applied, or (--delta) that DEST holds.  A take points *@digests into
 * @in, until the next take. */
bool nbd_range_write_digests (int fd, const struct nbd_range *range, const uint8_t *digests,
                              GError **error);
enum nbd_range_take nbd_range_take_digests (struct nbd_range_input *in,
                                            const struct nbd_range *range,
                                            const uint8_t **digests, GError **error);

struct blkhash;
/* Hash @range on its own (as an image of its length) on a worker thread,
 * its block digests into a new *@blocks (the old one freed). */
bool nbd_range_hash_start (struct blkhash *hash, const struct nbd_range *range,
                           uint8_t **blocks, bool *kicked, GError **error);

/* The error domain of a return direction that closed (its code is
 * FERRY_EXIT_STREAM): the other half ended, and says why itself. */
GQuark nbd_range_closed_quark (void);
/* The error domain of a write on the return direction that a stop signal
 * ended: the caller leaves the stop (and its message) to its main loop. */
GQuark nbd_range_stopped_quark (void);
/* Keep @error (owned) in *@first as a pipeline's first failure, unless
 * one is there already or @error is a stop (nbd_range_stopped_quark):
 * then free it. */
void nbd_range_keep_failure (GError **first, GError *error);
/* A local half whose return direction closed: its remote half failed, and
 * the parent, which knows it, kills this half before its line would
 * repeat the cause.  Waits up to 2 s for that, or for @control_fd to
 * close (a grant that comes meanwhile is dropped). */
void nbd_range_wait_for_parent (int control_fd);

#endif
