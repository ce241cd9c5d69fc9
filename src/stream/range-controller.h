/* ferry: --streams, the remote copy's controller (doc/nbd-stream.md,
 * section 8): which range goes to which local half, the checks on the
 * halves' reports, and the image digest composed from their block digests
 * in offset order, whatever order the ranges end in.
 *
 * A pure object: it reads and writes no socket, and knows no channel,
 * process or host.  nbd-remote.c carries the grants and the reports
 * (range-messages.h) and keeps one struct range_holder a channel; the
 * messages it gets back here name no channel, and it prefixes them. */
#ifndef FERRY_RANGE_CONTROLLER_H
#define FERRY_RANGE_CONTROLLER_H

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nbd-stream-format.h"
#include "range-messages.h"

/* The largest report a half sends: the ranges granted are at most
 * NBD_RANGE_SIZE, so 64 KiB of block digests, well inside a socket's
 * default send buffer. */
#define RANGE_REPORT_ROOM (NBD_RANGE_REPORT_SIZE + \
                           NBD_RANGE_SIZE / STREAM_BLOCK_SIZE * STREAM_DIGEST_SIZE)
/* Ranges done ahead of the first one still in progress, whose block
 * digests wait here to be folded into the image digest in offset order:
 * at most this many (up to 64 KiB of digests each, so 4 MiB); a half that
 * asks for a range beyond waits for the slow one (RANGE_WAIT). */
#define MAX_RANGES_AHEAD 64

/* What ranges add up to: a holder's (-v's line per stream) or the whole
 * copy's (the progress line and the summary). */
struct range_counts {
  uint64_t ranges;            /* reported done */
  uint64_t bytes;             /* their length */
  uint64_t data_bytes;        /* of that, sent as DATA */
  uint64_t same_bytes;        /* of that, in SAME records (--delta) */
};

/* One channel's part: what it was granted and has not reported yet.  The
 * controller writes it; its caller reads @done and @waiting. */
struct range_holder {
  struct nbd_range range;     /* the range it holds; index -1 none */
  bool waiting;               /* it asked beyond MAX_RANGES_AHEAD: call
                                 range_controller_next again once another
                                 report moved the composition on */
  struct range_counts done;   /* the ranges it reported done */
};

#define RANGE_HOLDER_INIT { .range = { -1, 0, 0 } }

/* What range_controller_next has for a holder. */
enum range_next {
  RANGE_GRANT,                /* a range: send the grant */
  RANGE_WAIT,                 /* none yet (MAX_RANGES_AHEAD): send nothing */
  RANGE_NONE_LEFT,            /* none left, or the copy stops: send the grant */
  RANGE_COPY_OVER,            /* the copy failed: send the grant */
};

struct range_controller;

/* A controller for an image copied over @streams channels.  The image's
 * size comes with the first report. */
struct range_controller *range_controller_new (unsigned streams);
void range_controller_free (struct range_controller *ctl);
typedef struct range_controller RangeController;
G_DEFINE_AUTOPTR_CLEANUP_FUNC (RangeController, range_controller_free)

/* @holder asked for a range: the answer, and in @grant what to send for
 * it (but for RANGE_WAIT). */
enum range_next range_controller_next (struct range_controller *ctl,
                                       struct range_holder *holder,
                                       struct nbd_range_grant *grant);

/* @holder's report, @len bytes of @packet: the range it did (if any) is
 * counted, and its block digests folded into the image digest, now or once
 * the ranges before it are in.  False, with FERRY_EXIT_STREAM and a
 * message that names what is wrong, for a report that is short or of the
 * wrong length, of another image size, or for a range that @holder does
 * not hold (never granted, granted to another, reported already, or with
 * the wrong number of digests or bytes).  After range_controller_fail,
 * reports are ignored. */
bool range_controller_take_report (struct range_controller *ctl, struct range_holder *holder,
                                   const uint8_t *packet, size_t len, GError **error);

/* The copy failed: @error (taken), or NULL for a failure that its caller
 * reports itself.  The first failure wins; from then on every holder gets
 * RANGE_COPY_OVER and every report is ignored. */
void range_controller_fail (struct range_controller *ctl, GError *error);
/* The first failure's error, or NULL. */
const GError *range_controller_error (const struct range_controller *ctl);

/* A stop signal: no holder gets a range from now on (RANGE_NONE_LEFT). */
void range_controller_stop (struct range_controller *ctl);

/* @holder's channel ended well: false (with the error) if it still held a
 * range, which then would never be composed. */
bool range_holder_check_ended (const struct range_holder *holder, GError **error);

/* Every range is composed: true; else false, with FERRY_EXIT_STREAM and
 * how many were copied and the first that was not. */
bool range_controller_check_complete (const struct range_controller *ctl, GError **error);

/* Once every range is composed, the image digest (doc/nbd-stream.md,
 * section 5) in hex; NULL before. */
char *range_controller_digest (const struct range_controller *ctl);

/* The image's size (0 before the first report), its number of ranges, and
 * what the ranges reported so far add up to. */
uint64_t range_controller_size (const struct range_controller *ctl);
uint64_t range_controller_n_ranges (const struct range_controller *ctl);
const struct range_counts *range_controller_done (const struct range_controller *ctl);

#endif
