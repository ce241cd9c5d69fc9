/* ferry: --nbd-send (and --nbd-digest): read an export with pipelined
 * libnbd AIO and write it to stdout as a stream (doc/nbd-stream.md), or
 * as raw bytes with --raw, or only hash it.
 *
 * The pipeline: block status maps the export in windows ahead of the
 * reads; reads stay in flight up to a byte bound, spread over the
 * connections; a queue in offset order (the reorder window,
 * nbd-read-queue.h) holds each read until it and all before it are
 * done, and then the writer scans it for zero blocks, hashes it and
 * writes its records. */
#include <config.h>

#include <glib-unix.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "blkhash.h"
#include "deferred-line.h"
#include "error.h"
#include "message.h"
#include "gsource-release.h"
#include "iszero.h"
#include "nbd-ranges.h"
#include "nbd-read-queue.h"
#include "nbd-aio-source.h"
#include "export-open.h"
#include "nbd-send.h"
#include "nbd-stream-format.h"
#include "progress.h"
#include "signal-watch.h"
#include "zstd-pool.h"

#define B STREAM_BLOCK_SIZE
#define ZEROS_SIZE (1024 * 1024)
/* A run of records, once its read is done: DATA or ZERO per block run. */
struct segment {
  bool zero;
  bool same;                  /* --delta: SAME, DEST holds it (zero or not) */
  uint64_t offset, length;
  const uint8_t *data;        /* DATA: in the request's buffer */
  struct zstd_job *pack;      /* --compress, DATA: its compression; once
                                 sealed, NULL unless it shrank (CDATA) */
  uint8_t header[STREAM_RECORD_SIZE + STREAM_CDATA_TRAILER_SIZE];
  unsigned header_len;        /* bytes of @header */
};

/* A read of the queue (its holders of the buffer: the DATA segments
 * being hashed), and how the writer sends it. */
struct request {
  struct nbd_read read;       /* first: the queue allocates requests */
  struct segment *segments;   /* once the writer took it */
  unsigned n_segments;
  unsigned segment;           /* the writer's position: segment, and */
  uint64_t segment_pos;       /* bytes of it written (its header counts) */
  bool compared;              /* --delta: its blocks were compared with DEST's */
  bool sealed;                /* --compress: its compressions are done, and
                                 its records say which shrank */
};

/* --ranged: at most this many ranges sent wait for their receiver's
 * digests (64 KiB each, for the controller's ranges) before the next range
 * waits too: a receiver that lags this far holds the sender back. */
#define UNANSWERED_MAX 4

/* A range sent whose receiver's digests are still to come. */
struct sent_range {
  struct nbd_range range;
  uint8_t *blocks;            /* our block digests of it */
};

/* --ranged: where the sender stands between its ranges.  Each wait is a
 * watch on the fd it waits for (nbd_range_input), as the pump's on stdout,
 * never a block. */
enum boundary {
  BOUNDARY_READY,             /* before the first range: the receiver's READY */
  BOUNDARY_SENDING,           /* a range's records go, up to its end */
  BOUNDARY_CLOSED,            /* its RANGE_END was queued (or READY came):
                                 it waits for its answer, and a controller's
                                 half reports it, once fewer than
                                 UNANSWERED_MAX wait */
  BOUNDARY_NEXT,              /* the next range: the controller's grant, or
                                 (after every answer) the receiver's REQUEST */
  BOUNDARY_LAST,              /* none left: END, then the answers still to
                                 come (end_written) */
};

struct sender {
  const struct nbd_stream_options *options;
  bool digest_only, raw;
  struct nbd_export export;
  GMainLoop *loop;
  int out;                    /* stdout */
  bool out_is_pipe;           /* writes may block: poll when they would */
  off_t out_holes_from;       /* --raw into a regular file: zeros written
                                 past this offset (its size when taken) are
                                 skipped, as holes; -1 otherwise */
  int out_flags;              /* stdout's file status flags before, put back
                                 at the end; -1 if untouched */
  GSource *out_watch;         /* while stdout is full; --nbd-digest's, for
                                 its reader's end */
  bool kicked;                /* the pump has work: completions, room on stdout */

  struct nbd_read_queue reads;   /* struct request, each released once written
                                    and hashed; it ends at the export's size,
                                    or (--ranged) at the range's end */

  uint8_t preamble[STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE];  /* header or END */
  size_t preamble_len, preamble_pos;
  bool end_queued;            /* the END record is in the preamble */
  bool end_written;           /* --ranged: the END record went out, and
                                 stdout was shut with it */
  bool stop_queued;           /* the STOP record is (end_on_stop) */
  GSource *stop_timer;        /* after a stop: STOP_WRITE_SECONDS */
  bool stop_wait_over;        /* ...have passed: end_on_stop writes no more */

  struct blkhash hash;
  bool hashing;
  struct stream_end counts;
  struct nbd_stream_stats stats;
  struct progress *progress;  /* --progress, or NULL */
  struct nbd_stream_stop stop;   /* a signal's (nbd_stream_on_signal) */
  GError *error;              /* the first failure: the pipeline drains */
  bool finished;              /* everything was written (and, ranged, every
                                 answer came) */

  /* --ranged (nbd-ranges.h): one range at a time, from the controller
   * (control_fd) or asked for on stdin. */
  bool ranged;
  enum boundary boundary;     /* where it stands between ranges */
  struct nbd_range range;     /* the range being sent; index -1 before the first */
  struct stream_end range_base;   /* s->counts when it began */
  uint8_t *blocks;            /* its block digests (the hash fills them) */
  struct nbd_range_input back;     /* stdin: the receiver's messages */
  struct nbd_range_input control;  /* control_fd: the controller's grants */
  /* struct sent_range, oldest first: their answers are taken as they come
   * (take_answers), so that a range waits a round trip for none before it,
   * and checked in order.  A sender that reads REQUESTs, which come after
   * them, has at most one. */
  GQueue unanswered;

  /* --delta (with --ranged): the receiver's digests of each range's DEST
   * come first, and a block whose own digest is the same goes as SAME. */
  bool delta;
  uint8_t *dest_digests;      /* of the range being sent */
  bool have_dest_digests;     /* read from the return direction */
  uint64_t same_bytes;        /* in SAME records (the controller's -v line) */
  uint64_t range_same_base;   /* @same_bytes when the range began */

  /* --compress: each DATA record is compressed on these workers as soon as
   * its read is done, and goes as CDATA if that shrank it.  The reads
   * then hold half of --in-flight at most, and the room for their
   * compressed bytes (no more than theirs) the other half. */
  bool compress;
  struct zstd_pool *zstd;
  uint64_t packed_bytes;      /* of that room allocated */
};

static const uint8_t zeros[ZEROS_SIZE];

/* How long a stopped sender waits for room on stdout to end its stream
 * on a record's boundary and with STOP: a reader that stopped reading
 * must not keep it for good (the stream then ends where it stands), and a
 * remote copy's --drain-timeout (10 s) leaves it the time. */
#define STOP_WRITE_SECONDS 5

static void
schedule_pump (struct sender *s)
{
  __atomic_store_n (&s->kicked, true, __ATOMIC_RELEASE);
}

static void
set_failure (struct sender *s, GError *error)
{
  nbd_range_keep_failure (&s->error, error);
}

/* @g's compression, and its room. */
static void
free_pack (struct sender *s, struct segment *g)
{
  if (!g->pack)
    return;
  s->packed_bytes -= g->pack->out_cap;
  g_free (g->pack->out);
  g_clear_pointer (&g->pack, g_free);
}

/* The queue's @clear: what the writer added. */
static void
clear_request (struct nbd_read *read)
{
  struct request *r = (struct request *) read;
  struct sender *s = (struct sender *) ((char *) read->queue - offsetof (struct sender, reads));

  for (unsigned i = 0; r->segments && i < r->n_segments; i++)
    free_pack (s, &r->segments[i]);
  g_free (r->segments);
}

static void
add_segment (struct request *r, bool zero, bool same, uint64_t offset, uint64_t length,
             const uint8_t *data)
{
  struct segment *g = &r->segments[r->n_segments];

  /* Runs of the same kind merge (a DATA record stays within its read). */
  if (r->n_segments > 0 && g[-1].zero == zero && g[-1].same == same) {
    g[-1].length += length;
    return;
  }
  g->zero = zero;
  g->same = same;
  g->offset = offset;
  g->length = length;
  g->data = data;
  g->pack = NULL;
  r->n_segments++;
}

/* A segment's record header, and the counts. */
static void
encode_segment (struct sender *s, struct segment *g)
{
  stream_encode_record (g->header, g->same ? STREAM_SAME : g->zero ? STREAM_ZERO : STREAM_DATA,
                        g->offset, g->length);
  g->header_len = STREAM_RECORD_SIZE;
  if (g->same)
    return;
  if (g->zero) {
    s->counts.zero_records++;
    s->counts.zero_bytes += g->length;
  } else {
    s->counts.data_records++;
    s->counts.data_bytes += g->length;
  }
  s->stats.data_bytes = s->counts.data_bytes;
  s->stats.zero_bytes = s->counts.zero_bytes;
}

/* --compress: each DATA record of @r goes to the workers, into room for
 * fewer bytes than it has on the wire (its CDATA header is longer). */
static void
pack_request (struct sender *s, struct request *r)
{
  for (unsigned i = 0; s->compress && i < r->n_segments; i++) {
    struct segment *g = &r->segments[i];
    if (g->zero || g->same || g->length <= STREAM_CDATA_TRAILER_SIZE + 1)
      continue;
    g->pack = g_new0 (struct zstd_job, 1);
    g->pack->in = g->data;
    g->pack->in_len = g->length;
    g->pack->out_cap = g->length - STREAM_CDATA_TRAILER_SIZE - 1;
    g->pack->out = g_malloc (g->pack->out_cap);
    s->packed_bytes += g->pack->out_cap;
    zstd_pool_push (s->zstd, g->pack);
  }
}

/* --compress, before @r is written: once its compressions are done, the
 * records that shrank become CDATA, and the others' room goes; false
 * while some are not done (a worker's kick brings the pump back). */
static bool
seal_request (struct sender *s, struct request *r)
{
  for (unsigned i = 0; i < r->n_segments; i++)
    if (r->segments[i].pack && !zstd_job_done (r->segments[i].pack))
      return false;
  for (unsigned i = 0; i < r->n_segments; i++) {
    struct segment *g = &r->segments[i];
    if (!g->pack)
      continue;
    if (g->pack->out_len == 0) {
      free_pack (s, g);
      continue;
    }
    s->packed_bytes -= g->pack->out_cap - g->pack->out_len;
    g->pack->out_cap = g->pack->out_len;
    g->pack->out = g_realloc (g->pack->out, g->pack->out_len);
    stream_encode_cdata (g->header, g->offset, g->length, g->pack->out_len);
    g->header_len = STREAM_RECORD_SIZE + STREAM_CDATA_TRAILER_SIZE;
  }
  r->sealed = true;
  return true;
}

/* The writer takes the head request: split it into records, hash it
 * (with --delta, the records wait for compare_request). */
static void
take_request (struct sender *s, struct request *r)
{
  r->segments = g_new (struct segment, r->read.buf ? (r->read.length + B - 1) / B : 1);
  if (!r->read.buf) {
    add_segment (r, true, false, r->read.offset, r->read.length, NULL);
  } else {
    for (uint64_t pos = 0; pos < r->read.length; pos += B) {
      uint64_t n = MIN (B, r->read.length - pos);
      add_segment (r, is_zero (r->read.buf + pos, n), false, r->read.offset + pos, n,
                   r->read.buf + pos);
    }
  }
  for (unsigned i = 0; i < r->n_segments; i++) {
    struct segment *g = &r->segments[i];
    if (!s->delta)
      encode_segment (s, g);
    if (!s->hashing)
      continue;
    if (g->zero) {
      blkhash_zero (&s->hash, g->length);
    } else {
      r->read.refs++;
      blkhash_data_async (&s->hash, g->data, g->length, nbd_read_unref, r);
    }
  }
  if (!s->delta)
    pack_request (s, r);
}

/* --delta, --compress: the requests behind the head are hashed (and
 * compressed) as soon as they are read, in order, so that their digests
 * are ready when the writer compares them, and their records when it
 * writes them. */
static void
take_ahead (struct sender *s)
{
  for (GList *l = s->reads.reads.head; l; l = l->next) {
    struct request *r = l->data;
    if (!r->read.io.done || r->read.io.error)
      return;
    if (!r->segments)
      take_request (s, r);
  }
}

/* Whether a take came to its message; a failure (in *@error, which the
 * take set) is kept. */
static bool
took (struct sender *s, enum nbd_range_take taken, GError **error)
{
  if (taken == NBD_RANGE_FAILED)
    set_failure (s, *error);
  return taken == NBD_RANGE_TAKEN;
}

/* The receiver's digests of @sent against ours; false if they differ. */
static bool
check_answer (struct sender *s, const struct sent_range *sent, const uint8_t *answer)
{
  for (uint64_t i = 0; i < nbd_range_blocks (&sent->range, B); i++)
    if (memcmp (answer + i * STREAM_DIGEST_SIZE, sent->blocks + i * STREAM_DIGEST_SIZE,
                STREAM_DIGEST_SIZE) != 0) {
      set_failure (s, g_error_new (FERRY_ERROR, FERRY_EXIT_DIGEST,
                                   NBD_RANGE_FMT ": the digest of what the receiver "
                                   "applied differs from %s's, first at offset %" PRIu64,
                                   NBD_RANGE_ARGS (&sent->range), s->export.name,
                                   sent->range.offset + i * B));
      return false;
    }
  return true;
}

static void
free_sent_range (void *data)
{
  struct sent_range *sent = data;

  g_free (sent->blocks);
  g_free (sent);
}

/* --ranged: the answers that came, in order.  While a range waits for
 * one, the receiver's next message is that answer (it answers each range
 * before it reads the next: DEST's digests or a REQUEST come after). */
static void
take_answers (struct sender *s)
{
  struct sent_range *sent;

  /* Already waiting: the watch wakes the pump when more comes. */
  if (s->back.watch)
    return;
  while (!s->error && (sent = g_queue_peek_head (&s->unanswered))) {
    GError *error = NULL;
    const uint8_t *answer;
    if (!took (s, nbd_range_take_digests (&s->back, &sent->range, &answer, &error), &error) ||
        !check_answer (s, sent, answer))
      return;
    free_sent_range (g_queue_pop_head (&s->unanswered));
  }
}

/* How many ranges sent wait for their answers, once those that came are
 * taken (while any waits, a watch does). */
static unsigned
count_unanswered (struct sender *s)
{
  take_answers (s);
  return g_queue_get_length (&s->unanswered);
}

/* --delta, once @r is hashed: its blocks whose digest is DEST's become
 * SAME, and its records are encoded.  The range's DEST digests are taken
 * first (the RANGE record went before); false while they have not come
 * (a watch waits) or on a failure, and then nothing of @r may be written:
 * its records are not encoded. */
static bool
compare_request (struct sender *s, struct request *r)
{
  struct segment *taken = r->segments;
  unsigned n_taken = r->n_segments;
  GError *error = NULL;

  if (!s->have_dest_digests) {
    const uint8_t *dest;
    /* The answer for the range before comes first. */
    if (count_unanswered (s) > 0 ||
        !took (s, nbd_range_take_digests (&s->back, &s->range, &dest, &error), &error))
      return false;
    memcpy (s->dest_digests, dest, nbd_range_blocks (&s->range, B) * STREAM_DIGEST_SIZE);
    s->have_dest_digests = true;
  }
  r->segments = g_new (struct segment, (r->read.length + B - 1) / B);
  r->n_segments = 0;
  for (unsigned i = 0; i < n_taken; i++) {
    const struct segment *g = &taken[i];
    for (uint64_t pos = 0; pos < g->length; pos += B) {
      uint64_t n = MIN (B, g->length - pos), block = (g->offset + pos - s->range.offset) / B;
      /* A short zero block (the export's last) is sent: it costs no payload. */
      const uint8_t *own = !g->zero ? s->blocks + block * STREAM_DIGEST_SIZE
                         : n == B ? s->hash.zero_digest : NULL;
      bool same = own && memcmp (own, s->dest_digests + block * STREAM_DIGEST_SIZE,
                                 STREAM_DIGEST_SIZE) == 0;
      add_segment (r, g->zero, same, g->offset + pos, n, g->data ? g->data + pos : NULL);
      s->same_bytes += same ? n : 0;
    }
  }
  g_free (taken);
  for (unsigned i = 0; i < r->n_segments; i++)
    encode_segment (s, &r->segments[i]);
  pack_request (s, r);
  r->compared = true;
  return true;
}

/* The bytes that follow @g's header: its data, or their compression. */
static uint64_t
payload_length (const struct segment *g)
{
  return g->pack ? g->pack->out_len : g->length;
}

/* The iovecs for the rest of @r from its writer position. */
static int
fill_iov (struct sender *s, struct request *r, struct iovec *iov, int max)
{
  int n = 0;
  unsigned i = r->segment;
  uint64_t pos = r->segment_pos;

  for (; i < r->n_segments && n < max; i++, pos = 0) {
    struct segment *g = &r->segments[i];
    uint64_t length = payload_length (g);
    /* Zeros that skip_zeros may leave as a hole wait to be first. */
    if (g->zero && s->out_holes_from >= 0 && i != r->segment)
      break;
    if (!s->raw) {
      if (pos < g->header_len) {
        iov[n++] = (struct iovec) { g->header + pos, g->header_len - pos };
        pos = g->header_len;
      }
      pos -= g->header_len;
      if (g->zero || g->same)
        continue;
    }
    while (pos < length && n < max) {
      uint64_t len = length - pos;
      if (g->zero) {
        iov[n++] = (struct iovec) { (void *) zeros, MIN (len, ZEROS_SIZE) };
        pos += MIN (len, ZEROS_SIZE);
      } else {
        iov[n++] = (struct iovec) { (void *) ((g->pack ? g->pack->out : g->data) + pos), len };
        pos = length;
      }
    }
  }
  return n;
}

/* The bytes that @g puts on the stream: its record (header and payload),
 * or with --raw its image bytes. */
static uint64_t
segment_wire_length (const struct sender *s, const struct segment *g)
{
  return (s->raw ? 0 : g->header_len) +
         (s->raw || (!g->zero && !g->same) ? payload_length (g) : 0);
}

/* Move the writer position of @r on by *@n bytes, and take what it used
 * off *@n; true when all of @r is written. */
static bool
advance (struct sender *s, struct request *r, uint64_t *n)
{
  while (r->segment < r->n_segments) {
    uint64_t left = segment_wire_length (s, &r->segments[r->segment]) - r->segment_pos;
    if (*n < left) {
      r->segment_pos += *n;
      *n = 0;
      return false;
    }
    *n -= left;
    r->segment++;
    r->segment_pos = 0;
  }
  return true;
}

/* A write of @n bytes moves the writer on: over the head request, and
 * over those after it that the write carried too. */
static void
advance_queue (struct sender *s, uint64_t n)
{
  struct request *r = g_queue_peek_head (&s->reads.reads);

  for (bool head = true; r && (head || n > 0) && advance (s, r, &n); head = false) {
    nbd_read_queue_pop (&s->reads);
    r = g_queue_peek_head (&s->reads.reads);
  }
}

/* The image offset before which every record was written whole (with
 * --raw, every byte). */
static uint64_t
sent_to (struct sender *s)
{
  const struct request *r = g_queue_peek_head (&s->reads.reads);

  if (r == NULL)
    return s->reads.next_offset;
  if (r->segment == r->n_segments)
    return r->read.offset;
  return r->segments[r->segment].offset + (s->raw ? r->segment_pos : 0);
}

static gboolean
on_stdout_writable (gint fd, GIOCondition condition, gpointer data)
{
  struct sender *s = data;

  gsource_release (s->out_watch);
  s->out_watch = NULL;
  schedule_pump (s);
  return G_SOURCE_REMOVE;
}

/* --nbd-digest: stdout's reader has gone (a pipe's, or a remote digest's
 * ssh session): the line would go nowhere, so the image is read no
 * further. */
static gboolean
on_digest_reader_gone (gint fd, GIOCondition condition, gpointer data)
{
  struct sender *s = data;

  (void) fd;
  (void) condition;
  g_clear_pointer (&s->out_watch, gsource_release);
  set_failure (s, g_error_new (FERRY_ERROR, FERRY_EXIT_IO,
                               "cannot write the digest to stdout: its reader has gone "
                               "(the image was read up to offset %" PRIu64 ")", sent_to (s)));
  schedule_pump (s);
  return G_SOURCE_REMOVE;
}

/* Write @iov; false when stdout is full (a watch is set) or failed. */
static bool
write_out (struct sender *s, struct iovec *iov, int n, ssize_t *written)
{
  *written = s->digest_only ? 0 : writev (s->out, iov, n);
  if (s->digest_only)
    for (int i = 0; i < n; i++)
      *written += iov[i].iov_len;
  if (*written >= 0) {
    s->stats.wire_bytes += *written;
    return true;
  }
  if (errno == EINTR) {
    *written = 0;
    return true;
  }
  if (errno == EAGAIN) {
    if (!s->out_watch) {
      s->out_watch = g_unix_fd_source_new (s->out, G_IO_OUT | G_IO_ERR | G_IO_HUP);
      g_source_set_callback (s->out_watch, (GSourceFunc) (void (*) (void)) on_stdout_writable,
                             s, NULL);
      gsource_attach (s->out_watch);
    }
    return false;
  }
  set_failure (s, g_error_new (FERRY_ERROR, FERRY_EXIT_IO,
                               "cannot write the stream to stdout: %s (%" PRIu64
                               " bytes written; the image was sent up to offset %" PRIu64 ")",
                               g_strerror (errno), s->stats.wire_bytes, sent_to (s)));
  return false;
}

static void
queue_end (struct sender *s)
{
  if (s->hashing)
    blkhash_final (&s->hash, s->counts.digest);
  s->hashing = false;
  if (!s->raw) {
    stream_encode_end (s->preamble, s->export.size, &s->counts);
    s->preamble_len = sizeof s->preamble;
    s->preamble_pos = 0;
  }
  s->end_queued = true;
}

/* --ranged: the pipeline covers @range next, after its RANGE record. */
static void
start_range (struct sender *s, const struct nbd_range *range)
{
  size_t digests = nbd_range_blocks (range, B) * STREAM_DIGEST_SIZE;

  s->range = *range;
  s->boundary = BOUNDARY_SENDING;
  s->range_base = s->counts;
  s->range_same_base = s->same_bytes;
  nbd_read_queue_range (&s->reads, range->offset, range->offset + range->length);
  /* The pump issues the range's first map and reads: it may have passed
   * that step already (the grant came during its last write), and no
   * watch or completion would bring it back. */
  schedule_pump (s);
  GError *error = NULL;

  if (s->delta) {
    g_free (s->dest_digests);
    s->dest_digests = g_malloc (digests);
    s->have_dest_digests = false;
  }
  if (!nbd_range_hash_start (&s->hash, range, &s->blocks, &s->kicked, &error)) {
    set_failure (s, error);
    return;
  }
  s->hashing = true;
  stream_encode_record (s->preamble, STREAM_RANGE, range->offset, range->length);
  s->preamble_len = STREAM_RECORD_SIZE;
  s->preamble_pos = 0;
}

/* --ranged, once the pipeline reached the range's end: its RANGE_END. */
static void
queue_range_end (struct sender *s)
{
  struct stream_end e = {
    s->counts.data_records - s->range_base.data_records,
    s->counts.zero_records - s->range_base.zero_records,
    s->counts.data_bytes - s->range_base.data_bytes,
    s->counts.zero_bytes - s->range_base.zero_bytes, { 0 },
  };

  blkhash_final (&s->hash, e.digest);
  s->hashing = false;
  stream_encode_range_end (s->preamble, s->reads.end, &e);
  s->preamble_len = STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE;
  s->preamble_pos = 0;
  s->boundary = BOUNDARY_CLOSED;
}

/* The range just closed (if any) waits for its answer, and a controller's
 * half reports it, with our digests, and asks for the next: a receiver's
 * that differ fail the copy, whose image digest counts only when every
 * stream succeeded.  False while too many wait (take_answers watches). */
static bool
retire_range (struct sender *s)
{
  GError *error = NULL;

  if (count_unanswered (s) >= UNANSWERED_MAX)
    return false;
  if (s->options->control_fd > 0 &&
      !nbd_range_send_report (s->options->control_fd, s->export.size, &s->range, s->blocks,
                              s->counts.data_bytes - s->range_base.data_bytes,
                              s->same_bytes - s->range_same_base, &error)) {
    set_failure (s, error);
    return false;
  }
  if (s->range.index >= 0) {
    struct sent_range *sent = g_new (struct sent_range, 1);
    *sent = (struct sent_range) { s->range, g_steal_pointer (&s->blocks) };
    g_queue_push_tail (&s->unanswered, sent);
  }
  return true;
}

/* The next range in *@next, if it came: the controller's grant, or the
 * receiver's REQUEST, which follows its answers. */
static bool
take_next_range (struct sender *s, struct nbd_range *next)
{
  GError *error = NULL;

  if (s->options->control_fd > 0)
    return took (s, nbd_range_take_grant (&s->control, next, &error), &error);
  return count_unanswered (s) == 0 &&
         took (s, nbd_range_take_request (&s->back, s->export.size, next, &error), &error);
}

/* --ranged, once the pipeline reached the range's end (or before the
 * first): close the range with its RANGE_END; once that is written, open
 * the next range, or end the stream (END, counts zero; the answers still
 * to come are waited for after it, end_written).  Each wait returns, to
 * come back when its watch fires: the reads of the next range start as
 * soon as it is known, and no range waits for the answers of those before
 * it. */
static void
ranged_step (struct sender *s)
{
  GError *error = NULL;
  struct nbd_range next;

  switch (s->boundary) {
  case BOUNDARY_SENDING:
    queue_range_end (s);
    return;
  case BOUNDARY_READY:
    if (!took (s, nbd_range_take_ready (&s->back, &error), &error))
      return;
    s->boundary = BOUNDARY_CLOSED;
    /* fall through */
  case BOUNDARY_CLOSED:
    if (!retire_range (s))
      return;
    s->boundary = BOUNDARY_NEXT;
    /* fall through */
  case BOUNDARY_NEXT:
    if (!take_next_range (s, &next))
      return;
    if (next.index >= 0) {
      start_range (s, &next);
      return;
    }
    s->boundary = BOUNDARY_LAST;
    /* fall through */
  case BOUNDARY_LAST:;
    struct stream_end none = { 0 };
    stream_encode_end (s->preamble, s->export.size, &none);
    s->preamble_len = STREAM_RECORD_SIZE + STREAM_END_BODY_SIZE;
    s->preamble_pos = 0;
    s->end_queued = true;
  }
}

/* --raw into a regular file, as cp --sparse=always: the rest of @r's
 * segment, if zeros past the file's old end, is sought over and left a
 * hole.  Returns the bytes skipped, 0 if they are to be written. */
static uint64_t
skip_zeros (struct sender *s, struct request *r)
{
  if (s->out_holes_from < 0 || r->segment == r->n_segments || !r->segments[r->segment].zero)
    return 0;
  uint64_t left = payload_length (&r->segments[r->segment]) - r->segment_pos;
  off_t at = lseek (s->out, 0, SEEK_CUR);

  if (at < s->out_holes_from || lseek (s->out, left, SEEK_CUR) < 0)
    return 0;
  s->stats.wire_bytes += left;
  return left;
}

/* After the last write: a file whose output ends in skipped zeros is
 * extended over them (a failure here comes after any other). */
static void
finish_holes (struct sender *s)
{
  struct stat st;
  off_t end;

  if (s->out_holes_from < 0 || (end = lseek (s->out, 0, SEEK_CUR)) < 0 ||
      fstat (s->out, &st) < 0 || st.st_size >= end)
    return;
  if (ftruncate (s->out, end) < 0)
    set_failure (s, g_error_new (FERRY_ERROR, FERRY_EXIT_IO,
                                 "cannot extend stdout over its last hole to %jd bytes: %s",
                                 (intmax_t) end, g_strerror (errno)));
}

/* Write the rest of the preamble; false when stdout is full (a watch is
 * set) or failed. */
static bool
write_preamble (struct sender *s)
{
  struct iovec iov;
  ssize_t n;

  while (s->preamble_pos < s->preamble_len) {
    iov = (struct iovec) { s->preamble + s->preamble_pos, s->preamble_len - s->preamble_pos };
    if (!write_out (s, &iov, 1, &n))
      return false;
    s->preamble_pos += n;
  }
  return true;
}

/* A stop signal (not a cut) that is the failure to report: the record
 * part-written, where a full stdout took only part of a write, is
 * finished, and so is a RANGE, RANGE_END or END record queued, so that
 * the stream ends on a record's boundary at sent_to; then a STOP record
 * tells the receiver, which stops as this half did.  Nothing before the
 * stream's header went out (the receiver would open DEST only to stop),
 * and nothing once STOP_WRITE_SECONDS have passed.  False while stdout
 * is full; true once done or if writing failed. */
static bool
end_on_stop (struct sender *s)
{
  struct iovec iov[64];
  ssize_t n;

  if (s->raw || s->digest_only || !s->stop.first || s->stop.cut || s->stop_wait_over ||
      s->stats.wire_bytes == 0 || !s->error || s->error->code != s->stop.code)
    return true;
  if (!write_preamble (s))
    return s->out_watch == NULL;
  /* The END record went out: the copy is complete after all. */
  if (s->end_queued && !s->stop_queued) {
    s->finished = true;
    g_clear_error (&s->error);
    return true;
  }
  struct request *r = g_queue_peek_head (&s->reads.reads);
  while (r && r->segments && r->segment < r->n_segments && r->segment_pos > 0) {
    uint64_t left = segment_wire_length (s, &r->segments[r->segment]) - r->segment_pos;
    int k = fill_iov (s, r, iov, G_N_ELEMENTS (iov));
    int used = 0;
    for (uint64_t room = left; used < k && room > 0; used++) {
      iov[used].iov_len = MIN (iov[used].iov_len, room);
      room -= iov[used].iov_len;
    }
    if (!write_out (s, iov, used, &n))
      return s->out_watch == NULL;
    uint64_t written = n;
    if (advance (s, r, &written)) {
      nbd_read_queue_pop (&s->reads);
      break;
    }
  }
  if (!s->stop_queued && !s->finished) {
    stream_encode_record (s->preamble, STREAM_STOP, sent_to (s), s->stop.code - 128);
    s->preamble_len = STREAM_RECORD_SIZE;
    s->preamble_pos = 0;
    s->stop_queued = true;
    return end_on_stop (s);
  }
  return true;
}

/* Make @r, a read that is done, ready to write: its records taken,
 * compared (--delta, once its hashing is done: the queue's is the last
 * reference) and sealed (--compress); false while one of them waits. */
static bool
prepare_request (struct sender *s, struct request *r)
{
  if (!r->segments)
    take_request (s, r);
  if (s->delta && !r->compared && (r->read.refs > 1 || !compare_request (s, r)))
    return false;
  return !s->compress || r->sealed || seal_request (s, r);
}

/* The records of the requests after the head that are ready too, into
 * @iov's room after the head's whole records: a sparse image's or a
 * delta's short records go many to a write, not one each.  Not for
 * skip_zeros's holes, which are sought over, not written. */
static int
fill_following (struct sender *s, struct iovec *iov, int max)
{
  int n = 0;

  if (s->out_holes_from >= 0)
    return 0;
  for (GList *l = s->reads.reads.head->next; l && n < max && !s->error; l = l->next) {
    struct request *r = l->data;
    if (!r->read.io.done || r->read.io.error || !prepare_request (s, r))
      break;
    n += fill_iov (s, r, iov + n, max - n);
  }
  return n;
}

/* Once the END record is written.  A ranged stream's END goes before the
 * last ranges' answers come (ranged_step): stdout is shut with it, so that
 * the receiver, which ends at its stdin's end, answers and ends in the
 * same round trip; the sender stays for the answers, and a stop changes
 * nothing from then on (on_signal).  A local half's stdout is a
 * socketpair; a download's remote sender may write into sshd's pipe,
 * which cannot be shut (ENOTSOCK): its END follows every answer anyway. */
static void
end_written (struct sender *s)
{
  if (s->ranged && !s->end_written) {
    s->end_written = true;
    shutdown (s->out, SHUT_WR);
  }
  s->finished = !s->ranged || count_unanswered (s) == 0;
}

/* Write what is ready, in order; false if the writer must wait. */
static bool
write_ready (struct sender *s)
{
  struct iovec iov[64];
  ssize_t n;

  for (;;) {
    if (!write_preamble (s))
      return false;
    if (s->end_queued) {
      end_written (s);
      return true;
    }
    if (g_queue_is_empty (&s->reads.reads)) {
      if (s->reads.next_offset == s->reads.end && !s->error && s->ranged)
        ranged_step (s);
      else if (s->reads.next_offset == s->reads.end && !s->error)
        queue_end (s);
      if (s->end_queued || s->preamble_pos < s->preamble_len)
        continue;
      return true;
    }
    struct request *r = (struct request *) nbd_read_queue_ready (&s->reads);
    if (r == NULL || !prepare_request (s, r))
      return true;
    uint64_t skipped = skip_zeros (s, r);
    int k = skipped ? 0 : fill_iov (s, r, iov, G_N_ELEMENTS (iov));
    if (k > 0) {
      if (k < (int) G_N_ELEMENTS (iov))
        k += fill_following (s, iov + k, G_N_ELEMENTS (iov) - k);
      if (!write_out (s, iov, k, &n))
        return false;
    } else {
      n = skipped;
    }
    advance_queue (s, n);
  }
}

static gboolean
pump (gpointer data)
{
  struct sender *s = data;

  if (s->export.lost && !s->error)
    set_failure (s, g_error_copy (s->export.lost));
  if (s->hashing)
    blkhash_collect (&s->hash);
  if ((s->delta || s->compress) && (s->hashing || !s->ranged) && !s->error)
    take_ahead (s);
  if (s->ranged && !s->error)
    take_answers (s);
  if (!s->error)
    write_ready (s);
  /* Zero ranges from the map are done at once: write them now. */
  if (!s->error && !s->finished) {
    nbd_read_queue_issue (&s->reads);
    nbd_stream_sample_in_flight (&s->stats, s->reads.in_flight + s->packed_bytes);
    if (!s->error)
      write_ready (s);
  }
  /* On a failure, wait for the reads in flight (their buffers) first,
   * unless the connections are gone; on a stop, for the record part-written. */
  if (s->finished || (s->error && end_on_stop (s) &&
                      (nbd_export_in_flight (&s->export) == 0 || s->export.lost)))
    g_main_loop_quit (s->loop);
  return G_SOURCE_CONTINUE;
}

/* --progress (nbd_stream_progress_new): the image in offset order, and
 * how it crossed. */
static void
sample_progress (struct progress_counter *counters, void *data)
{
  const struct sender *s = data;

  counters[0].bytes = s->counts.data_bytes + s->counts.zero_bytes;
  counters[0].total = s->export.size;
  counters[1].bytes = s->counts.data_bytes;
  counters[2].bytes = s->counts.zero_bytes;
}

static const char *
mode_name (const struct sender *s)
{
  return s->digest_only ? "digest" : "send";
}

static gboolean
on_stop_wait_over (gpointer data)
{
  struct sender *s = data;

  g_clear_pointer (&s->stop_timer, gsource_release);
  s->stop_wait_over = true;
  schedule_pump (s);
  return G_SOURCE_REMOVE;
}

/* The first signal stops the reads, and the writes once the stream ends
 * on a record's boundary with STOP (end_on_stop), which the receiver
 * reports as complete; then it waits for the reads in flight.  One after
 * the END record was written changes nothing. */
static void
on_signal (int signum, void *data)
{
  struct sender *s = data;

  /* How far it got is said at the end (send_summary): a record
   * part-written is finished first. */
  switch (nbd_stream_on_signal (&s->stop, signum, s->finished || s->end_written, &s->error)) {
  case NBD_STREAM_SIGNAL_STATS:
    nbd_stream_print_summary (mode_name (s), &s->stats, NULL);
    break;
  case NBD_STREAM_SIGNAL_STOP:
    if (!s->stop_timer)
      s->stop_timer = gsource_timer_new (STOP_WRITE_SECONDS, on_stop_wait_over, s);
    schedule_pump (s);
    break;
  case NBD_STREAM_SIGNAL_CUT:
    g_main_loop_quit (s->loop);
    break;
  case NBD_STREAM_SIGNAL_IGNORE:
    break;
  }
}

/* Open SRC (or, --digest, the image): false if it cannot be, with its
 * line said and the exit code in @code. */
static bool
open_source (struct sender *s, int *code)
{
  const struct nbd_stream_options *options = s->options;
  g_autoptr (GError) error = NULL;

  s->export.kicked = &s->kicked;
  if (nbd_export_open (&s->export, options, s->digest_only ? options->digest : options->send,
                       false, &error))
    return true;
  /* An upload's local half: the parent prints it, and closes the channel
   * before the remote receiver's line about the empty stream comes. */
  if (!(options->report_fd > 0 && deferred_line_send (options->report_fd, error->message, NULL)))
    ferry_error ("%s", error->message);
  *code = error->code;
  return false;
}

/* Writes into a pipe or a socket that would block wait on the main loop
 * (on_stdout_writable); the flags come back in restore_stdout. */
static void
take_stdout (struct sender *s)
{
  struct stat st;
  bool known = fstat (s->out, &st) == 0;

  s->out_is_pipe = known && !S_ISREG (st.st_mode) && !S_ISBLK (st.st_mode);
  /* Appending writes ignore the offset: no seeking over zeros there. */
  if (s->raw && known && S_ISREG (st.st_mode) && !(fcntl (s->out, F_GETFL) & O_APPEND))
    s->out_holes_from = st.st_size;
  s->out_flags = s->out_is_pipe ? fcntl (s->out, F_GETFL) : -1;
  /* Restored at the end: the open file description is our parent's too. */
  if (s->out_flags >= 0)
    fcntl (s->out, F_SETFL, s->out_flags | O_NONBLOCK);
  /* Fewer, larger writes into a pipe (best effort; not a pipe: EBADF). */
  if (s->out_is_pipe)
    fcntl (s->out, F_SETPIPE_SZ, 1024 * 1024);
}

static void
restore_stdout (struct sender *s)
{
  if (s->out_flags >= 0)
    fcntl (s->out, F_SETFL, s->out_flags);
}

/* Everything the pump needs once SRC is open: the read queue, the hash,
 * the stream's header, stdout, the progress line.  False (with its line)
 * if SHA-256 cannot be had. */
static bool
prepare_send (struct sender *s)
{
  const struct nbd_stream_options *options = s->options;

  nbd_read_queue_init (&s->reads, &s->export, options->in_flight / (s->compress ? 2 : 1),
                       &s->stats.requests,
                       &s->kicked, &s->error, sizeof (struct request), clear_request);
  nbd_read_queue_range (&s->reads, 0, s->ranged ? 0 : s->export.size);
  nbd_range_input_init (&s->back, STDIN_FILENO, &s->kicked);
  nbd_range_input_init (&s->control, options->control_fd, &s->kicked);
  s->hashing = !s->ranged && (s->digest_only || !options->no_verify);
  if (s->hashing && !blkhash_init (&s->hash, s->export.size, B)) {
    s->hashing = false;
    ferry_error ("cannot set up SHA-256 (libcrypto)");
    return false;
  }
  /* SHA-256 of every data byte costs as much as the rest of the copy:
   * a thread of its own. */
  if (s->hashing)
    blkhash_start_worker (&s->hash, &s->kicked);
  if (s->compress)
    s->zstd = zstd_pool_new (MIN (g_get_num_processors (), 8), &s->kicked);
  if (!s->raw && !s->digest_only) {
    struct stream_header h = { (s->hashing || s->ranged ? STREAM_FLAG_DIGEST : 0) |
                               (s->delta ? STREAM_FLAG_DELTA : 0) |
                               (s->compress ? STREAM_FLAG_COMPRESS : 0), s->export.size, B };
    stream_encode_header_version (s->preamble, &h, s->ranged ? STREAM_VERSION_RANGES
                                                             : STREAM_VERSION);
    s->preamble_len = STREAM_HEADER_SIZE;
  }
  if (!s->digest_only) {
    take_stdout (s);
  } else {
    /* POLLERR (a pipe) or POLLHUP (a socket, a terminal) without asking. */
    s->out_watch = g_unix_fd_source_new (s->out, 0);
    g_source_set_callback (s->out_watch, (GSourceFunc) (void (*) (void)) on_digest_reader_gone,
                           s, NULL);
    gsource_attach (s->out_watch);
  }
  s->progress = nbd_stream_progress_new (options, sample_progress, s);
  s->stats.start_us = g_get_monotonic_time ();
  return true;
}

/* The pump, on the main loop, until all is written or the copy failed. */
static void
run_send (struct sender *s)
{
  GSource *kick = nbd_kick_source_new (&s->kicked, pump, s);

  schedule_pump (s);
  g_main_loop_run (s->loop);
  gsource_release (kick);
  if (s->out_watch)
    gsource_release (s->out_watch);
  g_clear_pointer (&s->stop_timer, gsource_release);
  nbd_range_input_clear (&s->back);
  nbd_range_input_clear (&s->control);
  restore_stdout (s);
}

/* The digest line as sha256sum writes it: a name that holds a backslash,
 * a newline or a carriage return has them escaped, and the line starts
 * with a backslash. */
static int
print_digest_line (const char *hex, const char *name)
{
  g_autoptr (GString) escaped = g_string_new (NULL);

  for (const char *p = name; *p; p++)
    if (*p == '\\')
      g_string_append (escaped, "\\\\");
    else if (*p == '\n')
      g_string_append (escaped, "\\n");
    else if (*p == '\r')
      g_string_append (escaped, "\\r");
    else
      g_string_append_c (escaped, *p);
  return printf ("%s%s  %s\n", strpbrk (name, "\\\n\r") ? "\\" : "", hex, escaped->str);
}

/* After the run: the first failure's line, or --digest's line on stdout,
 * and -v's summary.  Returns the exit code. */
static int
send_summary (struct sender *s)
{
  const struct nbd_stream_options *options = s->options;
  char hex[2 * BLKHASH_SIZE + 1] = "";
  int rc = FERRY_EXIT_OK;

  g_clear_pointer (&s->progress, progress_finish);
  /* Commands that failed because the connection went are told as that. */
  if (s->export.lost && s->error && s->error->code == FERRY_EXIT_NBD) {
    g_error_free (s->error);
    s->error = g_error_copy (s->export.lost);
  }
  if (s->error && options->control_fd > 0 && s->error->domain == nbd_range_closed_quark ())
    nbd_range_wait_for_parent (options->control_fd);
  if (s->error && s->stop.first && s->error->code == s->stop.code) {
    g_autofree char *message = s->error->message;
    s->error->message = s->digest_only
      ? g_strdup_printf ("%s; the image was read up to offset %" PRIu64, message, sent_to (s))
      : g_strdup_printf ("%s; the image was sent up to offset %" PRIu64 " (%" PRIu64
                         " bytes written)", message, sent_to (s), s->stats.wire_bytes);
  }
  if (s->error) {
    ferry_error ("%s", s->error->message);
    rc = s->error->code;
    g_clear_error (&s->error);
  } else if (s->digest_only || (!options->no_verify && !s->ranged)) {
    blkhash_hex (s->counts.digest, hex);
  }
  /* A reader gone is an error like any other (SIGPIPE is ignored). */
  if (s->digest_only && rc == FERRY_EXIT_OK &&
      (print_digest_line (hex, s->export.name) < 0 || fflush (stdout) != 0)) {
    ferry_error ("cannot write the digest to stdout: %s", g_strerror (errno));
    rc = FERRY_EXIT_IO;
  }
  if (options->verbose && !options->ranged)   /* as the receiver's */
    nbd_stream_print_summary (mode_name (s), &s->stats,
                              options->no_verify && !s->digest_only ? NULL : hex);
  nbd_stream_record_summary (&s->stats, options->no_verify && !s->digest_only ? NULL : hex);
  return rc;
}

/* What the run held. */
static void
free_sender (struct sender *s)
{
  /* Reads still in flight when a connection died: libnbd retired them
   * when it closed, so their buffers are free to go now. */
  nbd_export_close (&s->export);
  /* Before the buffers its jobs use. */
  zstd_pool_free (s->zstd);
  if (s->hashing)
    blkhash_clear (&s->hash);
  nbd_read_queue_clear (&s->reads);
  g_free (s->blocks);
  g_queue_clear_full (&s->unanswered, free_sent_range);
  g_free (s->dest_digests);
  g_main_loop_unref (s->loop);
}

int
nbd_send_main (const struct nbd_stream_options *options, bool digest_only)
{
  struct sender s = { .options = options, .digest_only = digest_only,
                      .raw = options->raw && !digest_only, .out = STDOUT_FILENO,
                      .out_holes_from = -1, .out_flags = -1,
                      .ranged = options->ranged && !digest_only,
                      .delta = options->ranged && options->delta && !digest_only,
                      .compress = options->compress && !options->raw && !digest_only,
                      .range = { -1, 0, 0 }, .unanswered = G_QUEUE_INIT };
  struct signal_watch *signals;
  int rc = FERRY_EXIT_FAILURE;

  signal (SIGPIPE, SIG_IGN);
  s.loop = g_main_loop_new (NULL, FALSE);
  /* From the start: a signal while connecting ends ferry with a message
   * (nbd_export_open), not in silence. */
  signals = signal_watch_new (on_signal, &s);
  if (open_source (&s, &rc) && prepare_send (&s)) {
    run_send (&s);
    /* Even after a failure: the offset its line names is then the file's. */
    finish_holes (&s);
    if (!s.error)
      nbd_export_finish (&s.export);
    signal_watch_free (signals);
    rc = send_summary (&s);
  } else {
    /* The export goes before the signal watch, as it came after it. */
    nbd_export_close (&s.export);
    signal_watch_free (signals);
  }
  free_sender (&s);
  return rc;
}
