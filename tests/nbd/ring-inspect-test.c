/* ferry: unit tests of the ring's inspector edits (buffer_ring_at, buffer_ring_move,
 * buffer_ring_write), and of --nbd's inspector driving them, on small rings whose
 * contents wrap around, fed in odd pieces; and of --nbd's pipes, which
 * peek and splice between socket pairs. */
#include <config.h>

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <glib.h>

#include "buffer-choose.h"
#include "buffer-nbd-pipe.h"
#include "buffer-ring.h"
#include "nbd-relay.h"
#include "session.h"

/* Endpoints over memory: a source handing out @data in pieces of @piece
 * bytes, and a sink taking at most @piece bytes a call into @out. */
struct mem_endpoint {
  struct endpoint base;
  const uint8_t *data;
  size_t len, pos, piece;
  GByteArray *out;
};

static ssize_t
mem_readv (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  struct mem_endpoint *m = (struct mem_endpoint *) ep;
  size_t n = 0, want = MIN (m->piece, m->len - m->pos);

  for (int i = 0; i < iovcnt && n < want; i++) {
    size_t c = MIN (iov[i].iov_len, want - n);
    memcpy (iov[i].iov_base, m->data + m->pos + n, c);
    n += c;
  }
  m->pos += n;
  return n;
}

static ssize_t
mem_writev (struct endpoint *ep, const struct iovec *iov, int iovcnt)
{
  struct mem_endpoint *m = (struct mem_endpoint *) ep;
  size_t n = 0;

  for (int i = 0; i < iovcnt && n < m->piece; i++) {
    size_t c = MIN (iov[i].iov_len, m->piece - n);
    if (m->out)
      g_byte_array_append (m->out, iov[i].iov_base, c);
    n += c;
  }
  return n;
}

static const struct endpoint_ops mem_ops = { .readv = mem_readv, .writev = mem_writev };

static struct mem_endpoint
mem (const void *data, size_t len, size_t piece, GByteArray *out)
{
  return (struct mem_endpoint) { { .ops = &mem_ops }, data, len, 0, piece, out };
}

/* Every move, in a ring whose head sits anywhere, matches memmove on a model. */
static void
test_move (void)
{
  static const uint8_t junk[16];

  for (size_t head = 0; head < 16; head++)
    for (size_t from = 0; from < 16; from++)
      for (size_t to = 0; to < 16; to++)
        for (size_t n = 0; n + MAX (from, to) <= 16; n++) {
          struct buffer *ring = buffer_ring_new (16);
          struct mem_endpoint src = mem (junk, head + 1, 16, NULL);
          struct mem_endpoint sink = mem (NULL, 0, head, NULL);
          uint8_t model[16];
          size_t c;

          /* Fill head + 1 bytes, drain head of them: the head moves there. */
          ring->ops->fill (ring, &src.base);
          ring->ops->drain (ring, &sink.base);
          for (size_t i = 0; i < 16; i++) {
            model[i] = i;
            buffer_ring_write (ring, i, &model[i], 1);
          }
          buffer_ring_move (ring, to, from, n);
          memmove (model + to, model + from, n);
          for (size_t i = 0; i < 16; i++)
            g_assert_cmpuint (*buffer_ring_at (ring, i, &c), ==, model[i]);
          buffer_free (ring);
        }
}

/* Moves the record stream @data through a relay's buffers and appends
 * what comes out of each direction to @got[dir]. */
typedef void (*capture_run_fn) (const uint8_t *data, size_t len, GByteArray *got[2]);

/* Every capture through @run: what comes out equals what went in. */
static void
check_captures (capture_run_fn run)
{
  g_autoptr (GPtrArray) paths = capture_paths ();

  for (guint c = 0; paths && c < paths->len; c++) {
    g_autoptr (GByteArray) want0 = g_byte_array_new ();
    g_autoptr (GByteArray) want1 = g_byte_array_new ();
    g_autoptr (GByteArray) got0 = g_byte_array_new ();
    g_autoptr (GByteArray) got1 = g_byte_array_new ();
    GByteArray *want[2] = { want0, want1 }, *got[2] = { got0, got1 };
    g_autoptr (GBytes) rec = capture_load (paths->pdata[c], want);
    size_t len;
    const uint8_t *data = g_bytes_get_data (rec, &len);

    run (data, len, got);
    for (int i = 0; i < 2; i++) {
      g_assert_cmpuint (got[i]->len, ==, want[i]->len);
      g_assert_true (memcmp (got[i]->data, want[i]->data, got[i]->len) == 0);
    }
  }
}

/* Through two small rings with --nbd's inspector, read and written in odd
 * pieces. */
static void
run_rings (const uint8_t *data, size_t len, GByteArray *got[2])
{
  struct nbd_config config = { .enabled = true };
  struct buffer *rings[2] = { buffer_ring_new (61 + NBD_RING_RESERVE),
                              buffer_ring_new (97 + NBD_RING_RESERVE) };
  struct nbd_relay *nr = nbd_relay_new (&config, NULL, rings[0], rings[1], NULL, NULL);
  size_t pos = 0;
  struct record r;

  while (record_next (data, len, &pos, &r)) {
    struct mem_endpoint src = mem (r.data, r.len, 13, NULL);
    struct mem_endpoint sink = mem (NULL, 0, 11, got[r.dir]);

    while (src.pos < src.len || rings[r.dir]->len > 0) {
      if (src.pos < src.len)
        rings[r.dir]->ops->fill (rings[r.dir], &src.base);
      g_assert_null (nbd_relay_error (nr));
      rings[r.dir]->ops->drain (rings[r.dir], &sink.base);
    }
  }
  nbd_relay_unref (nr);
  buffer_free (rings[0]);
  buffer_free (rings[1]);
}

static void
test_captures (void)
{
  check_captures (run_rings);
}

/* An endpoint that only offers an fd to splice: a socket pair's end. */
struct sock_endpoint {
  struct endpoint base;
  int fd;
};

static int
sock_splice_fd (struct endpoint *ep, bool write)
{
  return ((struct sock_endpoint *) ep)->fd;
}

static const struct endpoint_ops sock_ops = { .splice_fd = sock_splice_fd };

/* One direction through an NBD pipe: bytes written to feed[0] reach the
 * pipe's source feed[1]; its drains go to out[0] and are read at out[1]. */
struct pipe_dir {
  int feed[2], out[2];
  struct sock_endpoint src, dst;
  struct buffer *buf;
};

static void
pipe_dir_init (struct pipe_dir *d, size_t size)
{
  struct nbd_config nbd = { .enabled = true };

  g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, d->feed), ==, 0);
  g_assert_cmpint (socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK, 0, d->out), ==, 0);
  d->src = (struct sock_endpoint) { { .ops = &sock_ops }, d->feed[1] };
  d->dst = (struct sock_endpoint) { { .ops = &sock_ops }, d->out[0] };
  d->buf = buffer_choose (&d->src.base, &d->dst.base, size, true, &nbd);
  g_assert_true (buffer_nbd_pipe_is (d->buf));
}

static void
pipe_dir_clear (struct pipe_dir *d)
{
  buffer_free (d->buf);
  for (int i = 0; i < 2; i++) {
    close (d->feed[i]);
    close (d->out[i]);
  }
}

/* Write @len bytes to the source in pieces of 13, filling and draining the
 * pipe as they go, until all of them came out into @got. */
static void
pipe_dir_move (struct pipe_dir *d, struct nbd_relay *nr, const uint8_t *data, size_t len,
               GByteArray *got)
{
  size_t written = 0, want = got->len + len;

  for (unsigned rounds = 0; written < len || got->len < want; rounds++) {
    uint8_t chunk[4096];
    ssize_t n;

    g_assert_cmpuint (rounds, <, 100000);
    if (written < len && (n = write (d->feed[0], data + written, MIN (13, len - written))) > 0)
      written += n;
    d->buf->ops->fill (d->buf, &d->src.base);
    g_assert_null (nbd_relay_error (nr));
    d->buf->ops->drain (d->buf, &d->dst.base);
    while ((n = read (d->out[1], chunk, sizeof chunk)) > 0)
      g_byte_array_append (got, chunk, n);
  }
}

/* Through two small NBD pipes between socket pairs, fed in odd pieces;
 * each end of stream at a message boundary is accepted. */
static void
run_pipes (const uint8_t *data, size_t len, GByteArray *got[2])
{
  struct nbd_config config = { .enabled = true };
  struct pipe_dir dirs[2];
  struct nbd_relay *nr;
  size_t pos = 0;
  struct record r;

  pipe_dir_init (&dirs[0], 61);
  pipe_dir_init (&dirs[1], 97);
  nr = nbd_relay_new (&config, NULL, dirs[0].buf, dirs[1].buf, NULL, NULL);
  while (record_next (data, len, &pos, &r))
    pipe_dir_move (&dirs[r.dir], nr, r.data, r.len, got[r.dir]);
  /* The client leaves first, then the server. */
  for (int i = 0; i < 2; i++) {
    shutdown (dirs[i].feed[0], SHUT_WR);
    g_assert_cmpint (dirs[i].buf->ops->fill (dirs[i].buf, &dirs[i].src.base), ==, 0);
    g_assert_null (nbd_relay_error (nr));
  }
  nbd_relay_unref (nr);
  pipe_dir_clear (&dirs[0]);
  pipe_dir_clear (&dirs[1]);
}

static void
test_pipe_captures (void)
{
  check_captures (run_pipes);
}

/* A violation seen in a pipe: the bytes that broke the rules never move. */
static void
test_pipe_violation (void)
{
  static const char reply[] = "HTTP/1.1 400 Bad Request\r\n";
  struct nbd_config config = { .enabled = true };
  struct pipe_dir up, down;
  struct nbd_relay *nr;

  pipe_dir_init (&up, 4096);
  pipe_dir_init (&down, 4096);
  nr = nbd_relay_new (&config, NULL, up.buf, down.buf, NULL, NULL);
  g_assert_cmpint (write (down.feed[0], reply, sizeof reply - 1), ==, sizeof reply - 1);
  g_assert_cmpint (down.buf->ops->fill (down.buf, &down.src.base), ==, -1);
  g_assert_cmpint (errno, ==, EAGAIN);
  g_assert_nonnull (nbd_relay_error (nr));
  g_assert_nonnull (strstr (nbd_relay_error (nr)->message, "looks like a web server"));
  g_assert_cmpuint (down.buf->len, ==, 0);
  nbd_relay_unref (nr);
  pipe_dir_clear (&up);
  pipe_dir_clear (&down);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/ring/move", test_move);
  g_test_add_func ("/nbd/ring-captures", test_captures);
  g_test_add_func ("/nbd/pipe-captures", test_pipe_captures);
  g_test_add_func ("/nbd/pipe-violation", test_pipe_violation);
  return g_test_run ();
}
