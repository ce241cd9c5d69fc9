/* ferry: --streams, a local half's side of the controller and both ends'
 * messages on a ranged stream's return direction (nbd-ranges.h). */
#include <config.h>

#include <glib-unix.h>

#include "nbd-ranges.h"

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "blkhash.h"
#include "gsource-release.h"
#include "error.h"
#include "nbd-stream-format.h"
#include "signal-watch.h"

#define B STREAM_BLOCK_SIZE

G_DEFINE_QUARK (ferry-nbd-range-closed, nbd_range_closed)
G_DEFINE_QUARK (ferry-nbd-range-stopped, nbd_range_stopped)

void
nbd_range_keep_failure (GError **first, GError *error)
{
  /* A stop signal that ended a wait on the ranged stream's return
   * direction: the main loop delivers it (on_signal). */
  if (*first || error->domain == nbd_range_stopped_quark ())
    g_error_free (error);
  else
    *first = error;
}

/* A write waits with poll while the fd is full (the stream's fds, which
 * the pipelines made non-blocking).  A stop signal gives up the wait (a
 * write on a blocking fd would restart), even one that came just before
 * it, and the caller leaves the stop to its main loop. */
static bool
wait_fd (int fd, short events, GError **error)
{
  int ready = signal_watch_poll (fd, events, -1);

  if (ready < 0 && errno != EINTR && !signal_watch_stop_pending ())
    return ferry_set_error (error, FERRY_EXIT_IO, "cannot wait for the stream's channel: %s",
                            g_strerror (errno));
  if (signal_watch_stop_pending ()) {
    g_set_error (error, nbd_range_stopped_quark (), FERRY_EXIT_FAILURE, "stopped");
    return false;
  }
  return true;
}

static bool
write_all (int fd, const void *buf, size_t len, GError **error)
{
  const uint8_t *p = buf;

  while (len > 0) {
    ssize_t n = write (fd, p, len);
    if (n > 0) {
      p += n;
      len -= n;
    } else if (n < 0 && errno == EAGAIN) {
      if (!wait_fd (fd, POLLOUT, error))
        return false;
    } else if (n < 0 && (errno == EPIPE || errno == ECONNRESET)) {
      /* As a read's EOF: the other half (or the link) ended. */
      g_set_error (error, nbd_range_closed_quark (), FERRY_EXIT_STREAM,
                   "the stream's channel closed");
      return false;
    } else if (n < 0 && errno != EINTR) {
      return ferry_set_error (error, FERRY_EXIT_IO, "cannot write to the stream's channel: %s",
                              g_strerror (errno));
    }
  }
  return true;
}

void
nbd_range_wait_for_parent (int control_fd)
{
  gint64 deadline = g_get_monotonic_time () + 2 * G_USEC_PER_SEC;
  uint8_t grant[NBD_RANGE_GRANT_SIZE];

  /* Until the kill, the control socket's close, or 2 s: a grant that
   * answers this half's last report is no reason to stop waiting. */
  for (gint64 now; (now = g_get_monotonic_time ()) < deadline;) {
    struct pollfd p = { control_fd, POLLIN, 0 };
    int ready = poll (&p, 1, (int) ((deadline - now + 999) / 1000));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      return;
    ssize_t n = recv (control_fd, grant, sizeof grant, MSG_DONTWAIT);
    if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
      return;
  }
}

void
nbd_range_input_init (struct nbd_range_input *in, int fd, bool *kicked)
{
  *in = (struct nbd_range_input) { .fd = fd, .kicked = kicked };
}

void
nbd_range_input_clear (struct nbd_range_input *in)
{
  g_clear_pointer (&in->watch, gsource_release);
  g_clear_pointer (&in->body, g_free);
}

static gboolean
on_readable (gint fd, GIOCondition condition, gpointer data)
{
  struct nbd_range_input *in = data;

  g_clear_pointer (&in->watch, gsource_release);
  __atomic_store_n (in->kicked, true, __ATOMIC_RELEASE);
  return G_SOURCE_REMOVE;
}

static enum nbd_range_take
wait_readable (struct nbd_range_input *in)
{
  if (!in->watch) {
    in->watch = g_unix_fd_source_new (in->fd, G_IO_IN | G_IO_HUP | G_IO_ERR);
    g_source_set_callback (in->watch, (GSourceFunc) (void (*) (void)) on_readable, in, NULL);
    gsource_attach (in->watch);
  }
  return NBD_RANGE_WAIT;
}

/* Read on into @buf until its @len bytes are in (*@have so far).  Only
 * what poll says is there: the fd may block. */
static enum nbd_range_take
fill (struct nbd_range_input *in, uint8_t *buf, size_t len, size_t *have, const char *what,
      GError **error)
{
  while (*have < len) {
    struct pollfd p = { in->fd, POLLIN, 0 };
    ssize_t n = poll (&p, 1, 0);
    if (n == 0)
      return wait_readable (in);
    n = n < 0 ? -1 : read (in->fd, buf + *have, len - *have);
    if (n > 0) {
      *have += n;
    } else if (n == 0) {
      g_set_error (error, nbd_range_closed_quark (), FERRY_EXIT_STREAM,
                   "the stream's channel closed before %s", what);
      return NBD_RANGE_FAILED;
    } else if (errno == EAGAIN) {
      return wait_readable (in);
    } else if (errno != EINTR) {
      ferry_set_error (error, FERRY_EXIT_IO, "cannot read the stream's channel: %s",
                       g_strerror (errno));
      return NBD_RANGE_FAILED;
    }
  }
  return NBD_RANGE_TAKEN;
}

bool
nbd_range_send_report (int fd, uint64_t size, const struct nbd_range *done,
                       const uint8_t *digests, uint64_t data_bytes, uint64_t same_bytes,
                       GError **error)
{
  struct nbd_range_report report = { size, done ? done->index : -1, data_bytes, same_bytes, 0 };
  g_autofree uint8_t *packet = NULL;
  size_t len;
  ssize_t n;

  if (done && done->index >= 0)
    report.n_blocks = nbd_range_blocks (done, B);
  len = NBD_RANGE_REPORT_SIZE + (size_t) report.n_blocks * STREAM_DIGEST_SIZE;
  packet = g_malloc (len);
  nbd_range_report_encode (&report, packet);
  if (report.n_blocks)
    memcpy (packet + NBD_RANGE_REPORT_SIZE, digests, len - NBD_RANGE_REPORT_SIZE);
  /* One packet, well inside the socket's buffer (RANGE_REPORT_ROOM), which
   * the controller empties at once. */
  do
    n = send (fd, packet, len, MSG_NOSIGNAL);
  while (n < 0 && errno == EINTR);
  if (n != (ssize_t) len)
    return ferry_set_error (error, FERRY_EXIT_FAILURE, "the copy's controller is gone");
  return true;
}

enum nbd_range_take
nbd_range_take_grant (struct nbd_range_input *control, struct nbd_range *next, GError **error)
{
  uint8_t answer[NBD_RANGE_GRANT_SIZE];
  struct nbd_range_grant grant;
  ssize_t n;

  do
    n = recv (control->fd, answer, sizeof answer, MSG_DONTWAIT);
  while (n < 0 && errno == EINTR);
  if (n < 0 && errno == EAGAIN)
    return wait_readable (control);
  if (n < 0 || !nbd_range_grant_decode (answer, n, &grant) ||
      grant.index == NBD_RANGE_COPY_OVER) {
    ferry_set_error (error, FERRY_EXIT_FAILURE, "the copy's controller is gone");
    return NBD_RANGE_FAILED;
  }
  *next = (struct nbd_range) { grant.index, grant.offset, grant.length };
  return NBD_RANGE_TAKEN;
}

bool
nbd_range_hash_start (struct blkhash *hash, const struct nbd_range *range, uint8_t **blocks,
                      bool *kicked, GError **error)
{
  g_free (*blocks);
  *blocks = g_malloc (nbd_range_blocks (range, B) * STREAM_DIGEST_SIZE);
  if (!blkhash_init (hash, range->length, B))
    return ferry_set_error (error, FERRY_EXIT_FAILURE, "cannot set up SHA-256 (libcrypto)");
  hash->blocks = *blocks;
  blkhash_start_worker (hash, kicked);
  return true;
}

/* One record of @type on the return direction (@what: the message, for
 * errors). */
static enum nbd_range_take
take_record (struct nbd_range_input *in, uint32_t type, const char *what, uint64_t *offset,
             uint64_t *length, GError **error)
{
  g_autofree char *before = g_strdup_printf ("%s came", what);
  enum nbd_range_take taken = fill (in, in->record, sizeof in->record, &in->record_have,
                                    before, error);
  uint32_t got;

  if (taken != NBD_RANGE_TAKEN)
    return taken;
  in->record_have = 0;
  if (!stream_decode_record (in->record, &got, offset, length) || got != type) {
    ferry_set_error (error, FERRY_EXIT_STREAM, "not %s (a bad type or checksum) on the "
                     "stream's return direction", what);
    return NBD_RANGE_FAILED;
  }
  return NBD_RANGE_TAKEN;
}

bool
nbd_range_write_ready (int fd, GError **error)
{
  uint8_t rec[STREAM_RECORD_SIZE];

  stream_encode_record (rec, STREAM_READY, 0, 0);
  return write_all (fd, rec, sizeof rec, error);
}

enum nbd_range_take
nbd_range_take_ready (struct nbd_range_input *in, GError **error)
{
  uint64_t offset, length;
  enum nbd_range_take taken = take_record (in, STREAM_READY, "the receiver's READY", &offset,
                                           &length, error);

  if (taken == NBD_RANGE_TAKEN && (offset != 0 || length != 0)) {
    ferry_set_error (error, FERRY_EXIT_STREAM, "a READY at offset %" PRIu64 ", length %"
                     PRIu64 " on the stream's return direction: both must be 0",
                     offset, length);
    return NBD_RANGE_FAILED;
  }
  return taken;
}

bool
nbd_range_write_request (int fd, const struct nbd_range *range, uint64_t size,
                         GError **error)
{
  uint8_t rec[STREAM_RECORD_SIZE];

  if (range->index < 0)
    stream_encode_record (rec, STREAM_REQUEST, size, 0);
  else
    stream_encode_record (rec, STREAM_REQUEST, range->offset, range->length);
  return write_all (fd, rec, sizeof rec, error);
}

enum nbd_range_take
nbd_range_take_request (struct nbd_range_input *in, uint64_t size, struct nbd_range *range,
                        GError **error)
{
  uint64_t offset, length;
  enum nbd_range_take taken = take_record (in, STREAM_REQUEST, "a range request", &offset,
                                           &length, error);

  if (taken != NBD_RANGE_TAKEN)
    return taken;
  if (length == 0 && offset == size) {
    *range = (struct nbd_range) { -1, 0, 0 };
    return NBD_RANGE_TAKEN;
  }
  if (length == 0 || offset > size || length > size - offset || length > NBD_RANGE_MAX ||
      offset % B || (length % B && offset + length != size)) {
    ferry_set_error (error, FERRY_EXIT_STREAM, "a request for the range [%" PRIu64 ", +%"
                     PRIu64 ") of an export of %" PRIu64 " bytes: not inside it, not on "
                     "%u-byte blocks, or more than %u bytes", offset, length, size, B,
                     NBD_RANGE_MAX);
    return NBD_RANGE_FAILED;
  }
  *range = (struct nbd_range) { 0, offset, length };
  return NBD_RANGE_TAKEN;
}

bool
nbd_range_write_digests (int fd, const struct nbd_range *range, const uint8_t *digests,
                         GError **error)
{
  size_t len = nbd_range_blocks (range, B) * STREAM_DIGEST_SIZE;
  uint8_t rec[STREAM_RECORD_SIZE], crc[4];
  uint32_t c = stream_crc32c (digests, len);

  stream_encode_record (rec, STREAM_DIGESTS, range->offset, len);
  for (int i = 0; i < 4; i++)
    crc[i] = c >> (24 - 8 * i);
  return write_all (fd, rec, sizeof rec, error) && write_all (fd, digests, len, error) &&
         write_all (fd, crc, sizeof crc, error);
}

/* The DIGESTS record for @range, checked: its digests and CRC follow. */
static enum nbd_range_take
take_digests_record (struct nbd_range_input *in, const struct nbd_range *range,
                     GError **error)
{
  size_t len = nbd_range_blocks (range, B) * STREAM_DIGEST_SIZE;
  uint64_t offset, length;
  enum nbd_range_take taken = take_record (in, STREAM_DIGESTS, "the digests of the range",
                                           &offset, &length, error);

  if (taken != NBD_RANGE_TAKEN)
    return taken;
  if (offset != range->offset || length != len) {
    ferry_set_error (error, FERRY_EXIT_STREAM, "digests for [%" PRIu64 ", %" PRIu64
                     " bytes of digests), expected the range at %" PRIu64 " (%zu)",
                     offset, length, range->offset, len);
    return NBD_RANGE_FAILED;
  }
  if (in->body_len != len + 4) {
    g_free (in->body);
    in->body = g_malloc (len + 4);
    in->body_len = len + 4;
  }
  in->body_have = 0;
  in->in_body = true;
  return NBD_RANGE_TAKEN;
}

enum nbd_range_take
nbd_range_take_digests (struct nbd_range_input *in, const struct nbd_range *range,
                        const uint8_t **digests, GError **error)
{
  enum nbd_range_take taken = in->in_body ? NBD_RANGE_TAKEN
                            : take_digests_record (in, range, error);

  if (taken != NBD_RANGE_TAKEN)
    return taken;
  taken = fill (in, in->body, in->body_len, &in->body_have, "the digests of the range came",
                error);
  if (taken != NBD_RANGE_TAKEN)
    return taken;
  in->in_body = false;
  size_t len = in->body_len - 4;
  const uint8_t *crc = in->body + len;
  if (((uint32_t) crc[0] << 24 | crc[1] << 16 | crc[2] << 8 | crc[3]) !=
      stream_crc32c (in->body, len)) {
    ferry_set_error (error, FERRY_EXIT_STREAM, "the digests of the range at offset %" PRIu64
                     " fail their checksum", range->offset);
    return NBD_RANGE_FAILED;
  }
  *digests = in->body;
  return NBD_RANGE_TAKEN;
}
