/* ferry: --nbd-receive: apply a stream from stdin (doc/nbd-stream.md), or
 * raw image bytes with --raw, to an export with pipelined libnbd AIO.
 *
 * Records arrive in offset order and never overlap, so their writes and
 * zeroes can all be in flight at once, up to a byte bound for writes and
 * a count per connection.  The stream is read only while there is room;
 * a DATA or ZERO record too large for the room left is taken piece by
 * piece.  A CDATA record is taken whole, then decompressed on a worker
 * while the commands in flight go on; the stream waits for it. */
#include <config.h>

#include <glib-unix.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blkhash.h"
#include "buffer-arena.h"
#include "deferred-line.h"
#include "error.h"
#include "message.h"
#include "gsource-release.h"
#include "iszero.h"
#include "nbd-block-digests.h"
#include "nbd-ranges.h"
#include "nbd-aio-source.h"
#include "export-open.h"
#include "nbd-receive.h"
#include "nbd-stream-format.h"
#include "progress.h"
#include "signal-watch.h"
#include "stats.h"
#include "zstd-pool.h"

#define INPUT_SIZE (1024 * 1024)
/* Between payloads: enough for many small records, little of a large
 * payload, whose rest is then read straight into its record. */
#define HEADER_READ (64 * 1024)

/* A piece of a DATA record or of raw input, at most a request's bytes,
 * shared by its writes. */
struct payload {
  unsigned refs;              /* the record's, each write's, and the hash's */
  uint64_t size;              /* of @data, counted in the receiver's @held */
  struct receiver *receiver;
  uint8_t *data;              /* from the receiver's @arena */
  void *piece;                /* ...there (buffer_arena_take) */
};

enum command { CMD_WRITE, CMD_ZERO, CMD_WRITE_ZEROS, CMD_FLUSH };

static const char *const command_names[] = { "write", "zero", "write (of zeros)", "flush" };

/* One NBD command in flight, in offset order. */
struct command_req {
  enum command command;
  uint64_t offset, length;
  struct payload *payload;    /* CMD_WRITE */
  struct nbd_command io;      /* its completion */
};

struct receiver {
  const struct nbd_stream_options *options;
  struct nbd_export export;
  GMainLoop *loop;
  bool kicked;                /* the pump has work (nbd_kick_source_new) */

  int in;                     /* stdin */
  int in_flags;               /* its file status flags before, put back at
                                 the end; -1 if unknown */
  GSource *in_watch;          /* while stdin has nothing to read */
  bool in_eof;
  uint8_t *input;             /* INPUT_SIZE bytes read ahead */
  const uint8_t *in_data;     /* what was read: @input, or the record's tail */
  size_t input_len, input_pos;
  size_t header_taken;        /* of options->stdin_header */

  struct stream_parser parser;
  bool header_seen, end_seen;
  bool truncated;             /* the failure: stdin ended before the END record */
  uint64_t size;              /* the image's size: the stream's, or (raw) the export's
                                 (UINT64_MAX: a regular file, which grows) */
  struct payload *record;     /* the piece being filled (start_piece) */
  uint64_t record_offset, record_length, record_have;   /* the piece's */
  struct payload *packed;     /* a CDATA record's compressed bytes being read */
  uint32_t packed_have;       /* bytes of it so far */
  struct zstd_pool *zstd;     /* one worker, once the header said COMPRESS */
  struct zstd_job unpack;     /* @packed into @record, while @unpacking */
  bool unpacking;
  uint64_t zero_pos, zero_end;   /* a ZERO range still to issue */
  uint64_t raw_pos;           /* --raw: image bytes read so far */
  uint8_t *zero_buffer;       /* for servers that cannot zero */

  GQueue commands;            /* struct command_req in flight, in offset order */
  uint64_t in_flight;         /* bytes of writes in flight */
  uint64_t held;              /* payload bytes allocated, whether being read,
                                 written or hashed: what --in-flight bounds */
  uint64_t in_flight_limit;
  struct buffer_arena arena;  /* the payloads' bytes */
  uint64_t applied_to;        /* every record before it was issued */
  uint64_t complete;          /* every command before it succeeded */
  bool complete_frozen;       /* a command failed: @complete stays */
  bool flushing;              /* the end: the flushes were issued */
  bool flush_failed;

  struct blkhash hash;
  bool hashing;
  unsigned char digest[BLKHASH_SIZE];
  struct nbd_stream_stats stats;
  struct progress *progress;  /* --progress, or NULL */
  struct nbd_stream_stop stop;   /* a signal's (nbd_stream_on_signal) */
  GError *error;              /* the first failure: the pipeline drains */

  /* A ranged stream (--ranged, nbd-ranges.h): each range is hashed on its
   * own, and once its writes completed its block digests go back on
   * stdout; a local half asks the controller for the ranges, and the
   * sender for each. */
  int out;                    /* stdout */
  struct nbd_range range;     /* the range asked for, or being applied */
  struct nbd_range_input control;  /* control_fd: the controller's grants */
  bool grant_pending;         /* a local half reported a range (or none) and
                                 waits for the next, on a watch, before it
                                 reads on */
  bool range_open;            /* between its RANGE and RANGE_END */
  bool range_applied;         /* its RANGE_END was checked: answer once its
                                 commands completed */
  uint64_t range_data;        /* its DATA bytes */
  uint8_t *blocks;            /* its block digests (the hash fills them) */
  /* --delta: DEST's digests of the range, computed once the range is
   * known and sent on stdout before any of its records is read; SAME
   * records take their digests from them. */
  struct nbd_block_digests *dest;
  bool dest_pending;          /* being computed: the stream waits */
  uint64_t range_same;        /* the range's SAME bytes */
};

static void
set_failure (struct receiver *r, GError *error)
{
  nbd_range_keep_failure (&r->error, error);
}

static void
payload_unref (struct payload *p)
{
  if (p && --p->refs == 0) {
    p->receiver->held -= p->size;
    buffer_arena_give (&p->receiver->arena, p->data, p->piece);
    g_free (p);
  }
}

static void
hashed (void *data)
{
  payload_unref (data);
}

static void
issue_on (struct receiver *r, struct nbd_conn *conn, enum command command, uint64_t offset,
          uint64_t length, struct payload *payload, const uint8_t *data)
{
  struct nbd_export *e = &r->export;
  struct command_req *c = g_new0 (struct command_req, 1);
  nbd_completion_callback done = { .callback = nbd_command_done, .user_data = &c->io };
  bool issued = false;

  c->command = command;
  c->offset = offset;
  c->length = length;
  c->io.conn = conn;
  c->io.kicked = &r->kicked;
  conn->in_flight++;
  if (payload) {
    c->payload = payload;
    payload->refs++;
    r->in_flight += length;
  }
  r->stats.requests++;
  switch (command) {
  case CMD_ZERO:
    issued = e->ops->zero (e, conn, length, offset, r->options->allocated, done,
                           &c->io.error);
    break;
  case CMD_FLUSH:
    issued = e->ops->flush (e, conn, done, &c->io.error);
    break;
  case CMD_WRITE:
  case CMD_WRITE_ZEROS:
    issued = e->ops->pwrite (e, conn, data, length, offset, done, &c->io.error);
    break;
  }
  if (!issued) {
    c->io.done = true;
    conn->in_flight--;
  }
  g_queue_push_tail (&r->commands, c);
  nbd_stream_sample_in_flight (&r->stats, r->in_flight);
}

static void
issue (struct receiver *r, enum command command, uint64_t offset, uint64_t length,
       struct payload *payload, const uint8_t *data)
{
  issue_on (r, nbd_export_pick (&r->export), command, offset, length, payload, data);
}

/* Once nothing else is in flight, even after a failure: every connection,
 * as a server need not make one connection's writes durable through
 * another's flush.  On the main loop, so that a second signal cuts it. */
static void
issue_flushes (struct receiver *r)
{
  r->flushing = true;
  /* --raw into a regular file: it ends with the bytes received. */
  if (r->options->raw && r->export.resizable && r->end_seen && !r->error) {
    GError *error = NULL;
    if (!r->export.ops->resize (&r->export, r->raw_pos, &error))
      set_failure (r, error);
  }
  for (unsigned i = 0; r->export.can_flush && i < r->export.n_conns; i++)
    issue_on (r, &r->export.conn[i], CMD_FLUSH, r->applied_to, 0, NULL, NULL);
}

/* Room for another record of a request's size, or for the CDATA record
 * whose payload comes next, held whole twice (compressed, and room for its
 * length); or the one being read goes on.  And room for another command. */
static bool
has_room (struct receiver *r)
{
  const struct stream_parser *p = &r->parser;
  uint64_t next = p->state == STREAM_IN_PAYLOAD && p->packed_length
                  ? (uint64_t) p->packed_length + p->record_length : r->export.request_size;

  return (r->record || r->packed || r->held == 0 ||
          r->held + next <= r->in_flight_limit) &&
         nbd_export_in_flight (&r->export) <
           r->export.n_conns * NBD_STREAM_REQUESTS_PER_CONNECTION;
}

/* Issue the pending ZERO range while there is room; true when all issued. */
static bool
issue_zero (struct receiver *r)
{
  while (r->zero_pos < r->zero_end && has_room (r)) {
    uint64_t n = r->zero_end - r->zero_pos;
    if (r->export.can_zero) {
      issue (r, CMD_ZERO, r->zero_pos, MIN (n, NBD_STREAM_MAX_ZERO), NULL, NULL);
      n = MIN (n, NBD_STREAM_MAX_ZERO);
    } else {
      n = MIN (n, r->export.request_size);
      if (!r->zero_buffer)
        r->zero_buffer = g_malloc0 (r->export.request_size);
      issue (r, CMD_WRITE_ZEROS, r->zero_pos, n, NULL, r->zero_buffer);
    }
    r->zero_pos += n;
  }
  if (r->zero_pos < r->zero_end)
    return false;
  r->applied_to = MAX (r->applied_to, r->zero_end);
  return true;
}

static void
queue_zero (struct receiver *r, uint64_t offset, uint64_t length)
{
  r->stats.zero_bytes += length;
  if (r->options->destination_is_zero) {
    r->applied_to = offset + length;
    return;
  }
  r->zero_pos = offset;
  r->zero_end = offset + length;
  issue_zero (r);
}

/* A zero run found in a raw piece (at most a request): at once. */
static void
zero_now (struct receiver *r, uint64_t offset, uint64_t length)
{
  r->stats.zero_bytes += length;
  if (r->options->destination_is_zero)
    return;
  if (r->export.can_zero) {
    issue (r, CMD_ZERO, offset, length, NULL, NULL);
  } else {
    if (!r->zero_buffer)
      r->zero_buffer = g_malloc0 (r->export.request_size);
    issue (r, CMD_WRITE_ZEROS, offset, length, NULL, r->zero_buffer);
  }
}

static void
issue_writes (struct receiver *r, struct payload *p, uint64_t offset,
              const uint8_t *data, uint64_t length)
{
  for (uint64_t pos = 0; pos < length; pos += r->export.request_size)
    issue (r, CMD_WRITE, offset + pos, MIN (r->export.request_size, length - pos), p,
           data + pos);
}

/* A whole piece of a DATA record (or raw input) is in @r->record: hash and
 * write it.
 * Raw pieces are scanned: their zero blocks become zero requests. */
static void
apply_record (struct receiver *r, bool scan)
{
  struct payload *p = r->record;
  uint64_t off = r->record_offset, len = r->record_length;
  uint32_t block = STREAM_BLOCK_SIZE;

  if (r->hashing) {
    p->refs++;
    blkhash_data_async (&r->hash, p->data, len, hashed, p);
  }
  if (!scan) {
    r->stats.data_bytes += len;
    issue_writes (r, p, off, p->data, len);
  } else {
    uint64_t run = 0;
    bool run_zero = false;
    for (uint64_t pos = 0;; pos = MIN (pos + block, len)) {
      uint64_t n = MIN (block, len - pos);
      bool zero = n > 0 && is_zero (p->data + pos, n);
      if (pos > run && (n == 0 || zero != run_zero)) {
        if (run_zero) {
          zero_now (r, off + run, pos - run);
        } else {
          r->stats.data_bytes += pos - run;
          issue_writes (r, p, off + run, p->data + run, pos - run);
        }
        run = pos;
      }
      run_zero = zero;
      if (n == 0)
        break;
    }
  }
  r->applied_to = off + len;
  payload_unref (p);
  r->record = NULL;
}

/* @length bytes, counted in @held. */
static struct payload *
new_payload (struct receiver *r, uint64_t length)
{
  struct payload *p = g_new (struct payload, 1);

  p->data = buffer_arena_take (&r->arena, length, &p->piece);
  p->refs = 1;
  p->size = length;
  p->receiver = r;
  r->held += length;
  return p;
}

/* The next piece of a DATA record (or of raw input) at @offset, with
 * @left bytes of it to come: at most a request, so that a record of any
 * size is held within --in-flight (has_room waits between pieces). */
static void
start_piece (struct receiver *r, uint64_t offset, uint64_t left)
{
  uint64_t length = MIN (left, r->export.request_size);

  r->record = new_payload (r, length);
  r->record_offset = offset;
  r->record_length = length;
  r->record_have = 0;
}

static void
on_dest_digests (struct nbd_block_digests *d, const GError *error, void *data)
{
  struct receiver *r = data;
  GError *e = NULL;

  r->dest_pending = false;
  __atomic_store_n (&r->kicked, true, __ATOMIC_RELEASE);
  if (error)
    set_failure (r, g_error_copy (error));
  else if (!r->error && !nbd_range_write_digests (r->out, &r->range, d->digests, &e))
    set_failure (r, e);
}

/* --delta: DEST's digests of r->range, for the sender (on_dest_digests). */
static void
start_dest_digests (struct receiver *r)
{
  GError *error = NULL;

  nbd_block_digests_free (r->dest);
  r->dest = nbd_block_digests_start (&r->export, r->size, r->range.offset,
                                     r->range.length, r->options->in_flight,
                                     on_dest_digests, r, &error);
  if (r->dest)
    r->dest_pending = true;
  else
    set_failure (r, error);
}

/* A local half of --streams: report @done (or nothing) to the controller,
 * which grants the next range (take_grant).  A remote half waits for the
 * sender's RANGE records. */
static bool
ask_range (struct receiver *r, const struct nbd_range *done)
{
  GError *error = NULL;

  if (r->options->control_fd <= 0)
    return true;
  if (!nbd_range_send_report (r->options->control_fd, r->size, done, r->blocks, r->range_data,
                         r->range_same, &error)) {
    set_failure (r, error);
    return false;
  }
  r->grant_pending = true;
  return true;
}

/* The controller's grant, if it came: the sender is asked for the range
 * (or for the END).  False while it has not, or on a failure. */
static bool
take_grant (struct receiver *r)
{
  GError *error = NULL;
  enum nbd_range_take taken = nbd_range_take_grant (&r->control, &r->range, &error);

  if (taken == NBD_RANGE_WAIT)
    return false;
  r->grant_pending = false;
  if (taken == NBD_RANGE_FAILED ||
      !nbd_range_write_request (r->out, &r->range, r->size, &error)) {
    set_failure (r, error);
    return false;
  }
  if (r->options->delta && r->range.index >= 0)
    start_dest_digests (r);
  return true;
}

static void
begin_range (struct receiver *r, uint64_t offset, uint64_t length)
{
  struct nbd_range got = { 0, offset, length };
  GError *error = NULL;

  if (r->options->control_fd > 0 &&
      (offset != r->range.offset || length != r->range.length || r->range.index < 0)) {
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "the sender sent the "
                                 "range [%" PRIu64 ", +%" PRIu64 "), not the one asked for",
                                 offset, length));
    return;
  }
  if (length > NBD_RANGE_MAX) {
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "a range of %" PRIu64
                                 " bytes, more than %u", length, NBD_RANGE_MAX));
    return;
  }
  if (r->options->control_fd <= 0) {
    r->range = got;
    if (r->options->delta)
      start_dest_digests (r);
  }
  if (!nbd_range_hash_start (&r->hash, &got, &r->blocks, &r->kicked, &error)) {
    set_failure (r, error);
    return;
  }
  r->hashing = true;
  r->range_open = true;
  r->range_data = 0;
  r->range_same = 0;
}

static void
end_range (struct receiver *r)
{
  unsigned char digest[BLKHASH_SIZE];

  blkhash_final (&r->hash, digest);
  r->hashing = false;
  r->range_open = false;
  if (memcmp (digest, r->parser.end.digest, BLKHASH_SIZE) != 0) {
    char want[2 * BLKHASH_SIZE + 1], got[2 * BLKHASH_SIZE + 1];
    blkhash_hex (r->parser.end.digest, want);
    blkhash_hex (digest, got);
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_DIGEST,
                                 NBD_RANGE_FMT ": digest mismatch: its RANGE_END says %s, "
                                 "the data received hashes to %s", NBD_RANGE_ARGS (&r->range),
                                 want, got));
    return;
  }
  r->range_applied = true;
}

/* The range's commands all completed: its digests go back, and (a local
 * half) the next range is asked for. */
static void
answer_range (struct receiver *r)
{
  GError *error = NULL;
  struct nbd_range done = r->range;

  r->range_applied = false;
  if (!nbd_range_write_digests (r->out, &r->range, r->blocks, &error)) {
    set_failure (r, error);
    return;
  }
  ask_range (r, &done);
}

static bool
check_header (struct receiver *r)
{
  const struct stream_header *h = &r->parser.header;

  r->size = h->size;
  /* A regular file ends with the image's size, larger or smaller. */
  if (r->export.resizable && h->size != r->export.size) {
    GError *error = NULL;
    if (!r->export.ops->resize (&r->export, h->size, &error)) {
      set_failure (r, error);
      return false;
    }
  }
  if (h->size > r->export.size) {
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_TOO_SMALL,
                                 "%s is %" PRIu64 " bytes, smaller than the stream's "
                                 "image of %" PRIu64 " bytes", r->export.name,
                                 r->export.size, h->size));
    return false;
  }
  r->header_seen = true;
  if (h->flags & STREAM_FLAG_COMPRESS)
    r->zstd = zstd_pool_new (1, &r->kicked);
  if (r->parser.ranged) {
    if (h->block_size != STREAM_BLOCK_SIZE || !(h->flags & STREAM_FLAG_DIGEST)) {
      set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "a ranged stream "
                                   "without digests, or with blocks of %" PRIu32 " bytes",
                                   h->block_size));
      return false;
    }
    if (r->options->verbose && !r->export.can_multi_conn)
      ferry_report ("%s does not advertise multi-conn: the writes of each stream are "
                     "durable once its own connection has flushed, at the end",
                     r->export.name);
    GError *error = NULL;
    if (!nbd_range_write_ready (r->out, &error)) {
      set_failure (r, error);
      return false;
    }
    return ask_range (r, NULL);
  }
  if (h->flags & STREAM_FLAG_DELTA) {
    /* SAME takes DEST's digests, which only a range computes. */
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "a delta stream of version "
                                 "1: ferry applies a delta only in the ranged stream of "
                                 "--streams (version 2)"));
    return false;
  }
  r->hashing = (h->flags & STREAM_FLAG_DIGEST) && !r->options->no_verify;
  if (r->hashing && !blkhash_init (&r->hash, h->size, h->block_size)) {
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_FAILURE,
                                 "cannot set up SHA-256 (libcrypto)"));
    return false;
  }
  if (r->hashing)
    blkhash_start_worker (&r->hash, &r->kicked);
  return true;
}

/* A DATA event's bytes go into the record's pieces, each applied when
 * full. */
static void
take_data (struct receiver *r, const struct stream_event *ev)
{
  uint64_t record_end = ev->record_offset + ev->record_length;

  for (uint64_t done = 0; done < ev->length;) {
    uint64_t n;
    if (!r->record)
      start_piece (r, ev->offset + done, record_end - (ev->offset + done));
    n = MIN (ev->length - done, r->record_length - r->record_have);
    /* Unless read_input put it there. */
    if (ev->data + done != r->record->data + r->record_have)
      memcpy (r->record->data + r->record_have, ev->data + done, n);
    r->record_have += n;
    done += n;
    if (r->record_have == r->record_length)
      apply_record (r, false);
  }
  r->range_data += ev->length;
}

/* A CDATA event's bytes go into the record's compressed payload; once
 * whole, it is decompressed into a payload of the record's length (both
 * bounded by the parser: fewer compressed bytes than that, and no more
 * than a DATA record's), on the worker (finish_unpack). */
static void
start_packed (struct receiver *r, uint32_t length)
{
  if (!r->packed) {
    r->packed = new_payload (r, length);
    r->packed_have = 0;
  }
}

static void
take_packed (struct receiver *r, const struct stream_event *ev)
{
  start_packed (r, ev->packed_length);
  /* Unless read_input put it there. */
  if (ev->data != r->packed->data + r->packed_have)
    memcpy (r->packed->data + r->packed_have, ev->data, ev->length);
  r->packed_have += ev->length;
  if (r->packed_have < ev->packed_length)
    return;
  r->record = new_payload (r, ev->record_length);
  r->record_offset = ev->record_offset;
  r->record_length = ev->record_length;
  r->range_data += ev->record_length;
  r->unpack = (struct zstd_job) { .decompress = true, .in = r->packed->data,
                                  .in_len = ev->packed_length, .out = r->record->data,
                                  .out_cap = ev->record_length };
  r->unpacking = true;
  zstd_pool_push (r->zstd, &r->unpack);
}

/* The CDATA record's decompression, once done: its bytes are applied as
 * DATA's, unless they are not exactly the record's length.  False while
 * the worker is at it (its kick brings the pump back). */
static bool
finish_unpack (struct receiver *r)
{
  const struct zstd_job *j = &r->unpack;
  g_autofree char *why = NULL;

  if (!zstd_job_done (j))
    return false;
  r->unpacking = false;
  g_clear_pointer (&r->packed, payload_unref);
  if (j->error == ZSTD_POOL_TOO_LONG)
    why = g_strdup ("decompresses to more bytes than that");
  else if (j->error)
    why = g_strdup_printf ("does not decompress: %s", j->error);
  else if (j->out_len != r->record_length)
    why = g_strdup ("decompresses to fewer bytes than that");
  if (why) {
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "the CDATA record at offset %"
                                 PRIu64 " (%" PRIu64 " bytes) %s", r->record_offset,
                                 r->record_length, why));
    return true;
  }
  apply_record (r, false);
  return true;
}

/* A STOP record (SIGHUP, SIGINT or SIGTERM, the parser checked): this
 * half stops as the signal would stop it, with its exit code (a signal of
 * its own may follow: the same stop, said as "stopped by SIGTERM"). */
static void
stop_with_sender (struct receiver *r, int signum)
{
  set_failure (r, g_error_new (FERRY_ERROR, 128 + signum, "the sender was stopped by %s",
                               signal_watch_name (signum)));
}

/* Parse the buffered input up to one event and act on it. */
static void
consume_stream (struct receiver *r)
{
  struct stream_event ev;
  size_t used = stream_parser_feed (&r->parser, r->in_data + r->input_pos,
                                    r->input_len - r->input_pos, &ev);

  r->input_pos += used;
  switch (ev.kind) {
  case STREAM_EVENT_NONE:
    break;
  case STREAM_EVENT_SAME:
    /* Only in a delta stream, inside the range (the parser checked). */
    blkhash_known (&r->hash, r->dest->digests + (ev.offset - r->range.offset) /
                   STREAM_BLOCK_SIZE * BLKHASH_SIZE, ev.length);
    r->applied_to = ev.offset + ev.length;
    r->range_same += ev.length;
    break;
  case STREAM_EVENT_HEADER:
    check_header (r);
    break;
  case STREAM_EVENT_DATA:
    take_data (r, &ev);
    break;
  case STREAM_EVENT_CDATA:
    take_packed (r, &ev);
    break;
  case STREAM_EVENT_ZERO:
    if (r->hashing)
      blkhash_zero (&r->hash, ev.length);
    queue_zero (r, ev.offset, ev.length);
    break;
  case STREAM_EVENT_END:
    if (r->parser.ranged && r->options->control_fd > 0 && r->range.index >= 0) {
      /* A local half asked for a range, not for the end. */
      set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "the sender ended the "
                                   "stream where " NBD_RANGE_FMT " was asked for",
                                   NBD_RANGE_ARGS (&r->range)));
      break;
    }
    r->end_seen = true;
    if (r->hashing) {
      blkhash_final (&r->hash, r->digest);
      r->hashing = false;
      if (memcmp (r->digest, r->parser.end.digest, BLKHASH_SIZE) != 0) {
        char want[2 * BLKHASH_SIZE + 1], got[2 * BLKHASH_SIZE + 1];
        blkhash_hex (r->parser.end.digest, want);
        blkhash_hex (r->digest, got);
        set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_DIGEST,
                                     "digest mismatch: the stream's END record says %s, "
                                     "the data received hashes to %s", want, got));
      }
    }
    break;
  case STREAM_EVENT_RANGE:
    begin_range (r, ev.offset, ev.length);
    break;
  case STREAM_EVENT_RANGE_END:
    end_range (r);
    break;
  case STREAM_EVENT_STOP:
    stop_with_sender (r, ev.length);
    break;
  case STREAM_EVENT_ERROR:
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "%s", r->parser.error));
    break;
  }
}

/* --raw: image bytes fill pieces of one request each. */
static void
consume_raw (struct receiver *r)
{
  size_t n = r->input_len - r->input_pos;

  if (r->raw_pos + n > r->size) {
    set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_TOO_SMALL,
                                 "%s is %" PRIu64 " bytes, and stdin has more", r->export.name,
                                 r->size));
    return;
  }
  if (!r->record)
    start_piece (r, r->raw_pos, r->size - r->raw_pos);
  n = MIN (n, r->record_length - r->record_have);
  memcpy (r->record->data + r->record_have, r->in_data + r->input_pos, n);
  r->record_have += n;
  r->input_pos += n;
  r->raw_pos += n;
  if (r->record_have == r->record_length)
    apply_record (r, true);
}

static void
finish_raw (struct receiver *r)
{
  if (r->record) {
    r->record_length = r->record_have;
    apply_record (r, true);
  }
  r->end_seen = true;
  if (r->hashing) {
    /* The digest of what was written: the image as far as stdin went. */
    r->hash.size = r->raw_pos;
    blkhash_final (&r->hash, r->digest);
    r->hashing = false;
  }
}

static gboolean
on_stdin_readable (gint fd, GIOCondition condition, gpointer data)
{
  struct receiver *r = data;

  gsource_release (r->in_watch);
  r->in_watch = NULL;
  __atomic_store_n (&r->kicked, true, __ATOMIC_RELEASE);
  return G_SOURCE_REMOVE;
}

/* read(2) of stdin, after the bytes that nbd_stream_main read first. */
static ssize_t
read_stdin (struct receiver *r, uint8_t *to, size_t cap)
{
  const struct nbd_stream_options *o = r->options;
  size_t n = MIN (cap, o->stdin_header_len - r->header_taken);

  if (n == 0)
    return read (r->in, to, cap);
  memcpy (to, o->stdin_header + r->header_taken, n);
  r->header_taken += n;
  return n;
}

/* Read more of stdin; false if it must wait. */
static bool
read_input (struct receiver *r)
{
  const struct stream_parser *p = &r->parser;
  uint8_t *to = r->input;
  size_t cap = INPUT_SIZE;
  ssize_t n;

  /* A payload goes straight into its record, saving a copy of every byte
   * (as nbdcopy's readers fill the buffers they write from). */
  if (!r->options->raw && p->state == STREAM_IN_PAYLOAD && p->packed_length) {
    start_packed (r, p->packed_length);
    to = r->packed->data + r->packed_have;
    cap = p->payload_left;
  } else if (!r->options->raw && p->state == STREAM_IN_PAYLOAD) {
    uint64_t record_end = p->record_offset + p->record_length;
    if (!r->record)
      start_piece (r, record_end - p->payload_left, p->payload_left);
    to = r->record->data + r->record_have;
    cap = MIN (p->payload_left, r->record_length - r->record_have);
  } else if (!r->options->raw) {
    cap = HEADER_READ;
  }
  n = read_stdin (r, to, cap);
  if (n > 0) {
    r->in_data = to;
    r->input_len = n;
    r->input_pos = 0;
    r->stats.wire_bytes += n;
    return true;
  }
  /* A reset is the stream's end too, cut short: the sender's side went
   * with bytes unread (a remote copy's channel closed on a killed remote
   * half), and the parser says the stream is truncated. */
  if (n == 0 || errno == ECONNRESET) {
    r->in_eof = true;
    return true;
  }
  if (errno == EINTR)
    return true;
  if (errno == EAGAIN) {
    r->in_watch = g_unix_fd_source_new (r->in, G_IO_IN | G_IO_HUP | G_IO_ERR);
    g_source_set_callback (r->in_watch, (GSourceFunc) (void (*) (void)) on_stdin_readable,
                           r, NULL);
    gsource_attach (r->in_watch);
    return false;
  }
  set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_IO, "cannot read stdin: %s",
                               g_strerror (errno)));
  return false;
}

/* --delta: the range's records wait for DEST's digests, all but the
 * RANGE record that a local half's request brings, and a STOP (the
 * sender sends nothing more, and waits for no digests).  The sender sends
 * nothing more until it has the digests, so stdin is read meanwhile: a
 * sender that went away is noticed at once, not after the range's reads. */
static bool
waits_for_digests (const struct receiver *r)
{
  const struct stream_parser *p = &r->parser;
  uint32_t type;
  uint64_t offset, length;

  if (!r->dest_pending || r->input_pos == r->input_len)
    return false;
  if (!(p->state == STREAM_IN_RECORD && p->have == 0 &&
        r->input_len - r->input_pos >= STREAM_RECORD_SIZE &&
        stream_decode_record (r->in_data + r->input_pos, &type, &offset, &length)))
    return true;
  return !((type == STREAM_RANGE && !p->in_range) || type == STREAM_STOP);
}

static void retire (struct receiver *r);

static void
work (struct receiver *r)
{
  bool raw = r->options->raw;

  while (!r->error && !r->export.lost && !r->in_watch) {
    if (r->unpacking && !finish_unpack (r))
      return;
    if (!issue_zero (r) || !has_room (r))
      return;
    if (r->grant_pending && !take_grant (r))
      return;
    if (r->range_applied) {
      retire (r);
      if (!g_queue_is_empty (&r->commands))
        return;
      answer_range (r);
      continue;
    }
    if (waits_for_digests (r))
      return;
    if (r->input_pos < r->input_len) {
      raw ? consume_raw (r) : consume_stream (r);
      continue;
    }
    if (r->in_eof) {
      if (raw)
        finish_raw (r);
      else if (!stream_parser_eof (&r->parser)) {
        /* The sender was stopped by the same stop, a moment before this
         * half heard of it: the stream ends because of the stop, whose
         * handler runs next and says how far DEST is complete.  (Only a
         * signal's handler sets stop_pending, and nothing clears it.) */
        if (signal_watch_stop_pending ())
          return;
        set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_STREAM, "%s",
                                     r->parser.error));
        r->truncated = true;
      }
      return;
    }
    if (!read_input (r))
      return;
  }
}

/* Retire completed commands from the head, in offset order. */
static void
retire (struct receiver *r)
{
  struct command_req *c;

  while ((c = g_queue_peek_head (&r->commands)) && c->io.done) {
    g_queue_pop_head (&r->commands);
    if (c->io.error && c->command == CMD_FLUSH) {
      set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_NBD, "%s: flush failed: %s",
                                   r->export.name, g_strerror (c->io.error)));
      r->flush_failed = true;
    } else if (c->io.error) {
      set_failure (r, g_error_new (FERRY_ERROR, FERRY_EXIT_NBD,
                                   "%s: %s at offset %" PRIu64 " (%" PRIu64 " bytes) "
                                   "failed: %s", r->export.name, command_names[c->command],
                                   c->offset, c->length, g_strerror (c->io.error)));
      r->complete_frozen = true;
    } else if (!r->complete_frozen) {
      r->complete = c->offset + c->length;
    }
    if (c->payload)
      r->in_flight -= c->length;
    payload_unref (c->payload);
    g_free (c);
  }
}

static gboolean
pump (gpointer data)
{
  struct receiver *r = data;

  if (r->hashing)
    blkhash_collect (&r->hash);
  retire (r);
  if (!r->flushing && !r->export.lost)
    work (r);
  retire (r);
  /* Checked after work(): a command it issued may have found the
   * connection gone, while the commands before it wait in flight on
   * others (a kill -9 of a multi-conn server).  Ending then without the
   * failure would be exit 0 with DEST incomplete. */
  if (r->export.lost) {
    set_failure (r, g_error_copy (r->export.lost));
    g_main_loop_quit (r->loop);
    return G_SOURCE_CONTINUE;
  }
  if (!r->flushing && g_queue_is_empty (&r->commands) &&
      (r->error || (r->end_seen && r->in_eof && r->zero_pos == r->zero_end)))
    issue_flushes (r);
  if (r->flushing && g_queue_is_empty (&r->commands))
    g_main_loop_quit (r->loop);
  return G_SOURCE_CONTINUE;
}

/* After a failure: where DEST is complete, for its line; NULL if nothing
 * was written, or the failure says enough. */
static char *
where_complete (const struct receiver *r, bool flushed)
{
  const char *flush_state = r->export.lost ? "" : flushed ? " (flushed)" : " (not flushed)";
  int code = r->error->code;

  if (code == FERRY_EXIT_DIGEST || code == FERRY_EXIT_TOO_SMALL ||
      (!r->header_seen && !r->options->raw))
    return NULL;
  if (r->parser.ranged && r->range_open)
    /* The ranges before were answered: complete, and flushed with it. */
    return g_strdup_printf ("in " NBD_RANGE_FMT ", %s is complete up to offset %" PRIu64
                            "%s", NBD_RANGE_ARGS (&r->range), r->export.name,
                            MAX (r->complete, r->range.offset), flush_state);
  if (r->parser.ranged)
    return g_strdup_printf ("the ranges %s answered for are complete%s", r->export.name,
                            flush_state);
  return g_strdup_printf ("%s is complete up to offset %" PRIu64 "%s", r->export.name,
                          r->complete, flush_state);
}

/* The first signal stops reading the stream; the commands in flight end
 * and every connection is flushed, so that the offset reported complete
 * is durable.  One after the END record changes nothing: only the flush
 * is left. */
static void
on_signal (int signum, void *data)
{
  struct receiver *r = data;

  switch (nbd_stream_on_signal (&r->stop, signum, r->end_seen, &r->error)) {
  case NBD_STREAM_SIGNAL_STATS:
    nbd_stream_print_summary ("receive", &r->stats, NULL);
    break;
  case NBD_STREAM_SIGNAL_STOP:
    __atomic_store_n (&r->kicked, true, __ATOMIC_RELEASE);
    break;
  case NBD_STREAM_SIGNAL_CUT:
    g_main_loop_quit (r->loop);
    break;
  case NBD_STREAM_SIGNAL_IGNORE:
    break;
  }
}

/* --progress (nbd_stream_progress_new): the image applied in offset
 * order, and how it came. */
static void
sample_progress (struct progress_counter *counters, void *data)
{
  const struct receiver *r = data;

  counters[0].bytes = r->applied_to;
  /* --raw into a regular file: of no size known before the end. */
  counters[0].total = r->size == UINT64_MAX ? 0 : r->size ? r->size : r->export.size;
  counters[1].bytes = r->stats.data_bytes;
  counters[2].bytes = r->stats.zero_bytes;
}

/* Everything the pump needs once DEST is open: the input buffer, the
 * parser, the progress line, --raw's hash, stdin that does not block. */
static void
prepare_receive (struct receiver *r)
{
  const struct nbd_stream_options *options = r->options;

  r->input = g_malloc (INPUT_SIZE);
  r->in_flight_limit = options->in_flight;
  buffer_arena_init (&r->arena, r->in_flight_limit, r->export.request_size);
  g_queue_init (&r->commands);
  stream_parser_init (&r->parser);
  r->parser.accept_ranges = options->ranged;
  r->parser.allow_delta = options->ranged && options->delta;
  nbd_range_input_init (&r->control, options->control_fd, &r->kicked);
  r->progress = nbd_stream_progress_new (options, sample_progress, r);
  r->stats.start_us = g_get_monotonic_time ();
  if (options->raw) {
    /* A regular file grows as written, and ends with what came. */
    r->size = r->export.resizable ? UINT64_MAX : r->export.size;
    r->hashing = (options->verbose || ferry_stats_enabled ()) && blkhash_init (&r->hash, r->size, STREAM_BLOCK_SIZE);
    if (r->hashing)
      blkhash_start_worker (&r->hash, &r->kicked);
  }
  /* Restored at the end: the open file description is our parent's too. */
  r->in_flags = fcntl (r->in, F_GETFL);
  if (r->in_flags >= 0)
    fcntl (r->in, F_SETFL, r->in_flags | O_NONBLOCK);
  fcntl (r->in, F_SETPIPE_SZ, INPUT_SIZE);
}

/* The pump, on the main loop, until DEST is flushed, the copy failed, or
 * a second signal cut it. */
static void
run_receive (struct receiver *r)
{
  GSource *kick = nbd_kick_source_new (&r->kicked, pump, r);

  __atomic_store_n (&r->kicked, true, __ATOMIC_RELEASE);
  g_main_loop_run (r->loop);
  gsource_release (kick);
  if (r->in_watch)
    gsource_release (r->in_watch);
  nbd_range_input_clear (&r->control);
  if (r->in_flags >= 0)
    fcntl (r->in, F_SETFL, r->in_flags);
}

/* After the run: the first failure's line, with where DEST is complete
 * (@flushed: and durable), and -v's summary.  Returns the exit code. */
static int
receive_summary (struct receiver *r, bool flushed)
{
  const struct nbd_stream_options *options = r->options;
  char hex[2 * BLKHASH_SIZE + 1] = "";
  int rc = FERRY_EXIT_OK;

  g_clear_pointer (&r->progress, progress_finish);
  /* Commands that failed because the connection went are told as that. */
  if (r->export.lost && r->error && r->error->code == FERRY_EXIT_NBD) {
    g_error_free (r->error);
    r->error = g_error_copy (r->export.lost);
  }
  if (r->error) {
    g_autofree char *where = where_complete (r, flushed);
    rc = r->error->code;
    /* A download's local half: the remote sender's end (or the link's)
     * explains a stream cut short or a return direction closed, and the
     * parent says so on one line. */
    bool cut = r->truncated || r->error->domain == nbd_range_closed_quark ();
    if (!(cut && options->report_fd > 0 &&
          deferred_line_send (options->report_fd, r->error->message, where)))
      ferry_error ("%s%s%s", r->error->message, where ? "; " : "", where ? where : "");
    g_clear_error (&r->error);
  } else if (r->end_seen && !r->parser.ranged &&
             (r->parser.header.flags & STREAM_FLAG_DIGEST || options->raw)) {
    blkhash_hex (r->digest, hex);
  }
  /* A ranged half's counts are its stream's: the controller's lines say
   * each stream's, and the copy's. */
  if (options->verbose && !options->ranged)
    nbd_stream_print_summary ("receive", &r->stats, hex);
  nbd_stream_record_summary (&r->stats, hex);
  return rc;
}

/* What the run held. */
static void
free_receiver (struct receiver *r)
{
  nbd_export_close (&r->export);
  /* Before the buffers its job uses. */
  zstd_pool_free (r->zstd);
  if (r->hashing)
    blkhash_clear (&r->hash);
  while (!g_queue_is_empty (&r->commands)) {
    struct command_req *c = g_queue_pop_head (&r->commands);
    payload_unref (c->payload);
    g_free (c);
  }
  payload_unref (r->record);
  payload_unref (r->packed);
  buffer_arena_clear (&r->arena);
  g_free (r->zero_buffer);
  g_free (r->blocks);
  nbd_block_digests_free (r->dest);
  g_free (r->input);
  g_main_loop_unref (r->loop);
}

int
nbd_receive_main (const struct nbd_stream_options *options)
{
  struct receiver r = { .options = options, .in = STDIN_FILENO, .out = STDOUT_FILENO,
                        .range = { -1, 0, 0 } };
  g_autoptr (GError) error = NULL;
  struct signal_watch *signals;
  bool flushed;
  int rc;

  signal (SIGPIPE, SIG_IGN);
  r.loop = g_main_loop_new (NULL, FALSE);
  /* From the start: a signal while connecting ends ferry with a message
   * (nbd_export_open), not in silence. */
  signals = signal_watch_new (on_signal, &r);
  r.export.kicked = &r.kicked;
  if (!nbd_export_open (&r.export, options, options->receive, true, &error)) {
    ferry_error ("%s", error->message);
    nbd_export_remove_created (&r.export);
    nbd_export_close (&r.export);
    signal_watch_free (signals);
    g_main_loop_unref (r.loop);
    return error->code;
  }
  prepare_receive (&r);
  run_receive (&r);
  if (!r.header_seen && !options->raw)
    nbd_export_remove_created (&r.export);
  flushed = r.flushing && g_queue_is_empty (&r.commands) && !r.flush_failed;
  /* After a failure or a stop (flushed on the main loop already), no wait
   * for the server to close: a signal in it would replace the message
   * below, and the first signal's code, with its own. */
  if (!r.export.lost && !r.stop.cut && !r.error)
    nbd_export_finish (&r.export);
  signal_watch_free (signals);
  if (!r.complete_frozen && g_queue_is_empty (&r.commands))
    r.complete = r.applied_to;
  rc = receive_summary (&r, flushed);
  free_receiver (&r);
  return rc;
}
