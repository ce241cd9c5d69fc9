/* ferry: unit test of --streams' pure parts: the schedule
 * (nbd_range_length), the half<->controller messages' encoding
 * (range-messages.c), and the remote copy's exit-code table
 * (remote-exit-codes.c). */
#include <config.h>

#include <glib.h>
#include <signal.h>
#include <string.h>

#include "exit-codes.h"
#include "range-messages.h"
#include "remote-exit-codes.h"

#define MIB (1024u * 1024)

/* 1 GiB over 4 streams: 15 ranges, five of 128 MiB, then shorter ones
 * down to NBD_RANGE_MIN; the 4 MiB rest under half NBD_RANGE_MIN joins the
 * last. */
static void
test_schedule (void)
{
  static const unsigned expected[] = { 128, 128, 128, 128, 128, 96, 72, 54, 40, 30, 23, 17,
                                       16, 16, 20 };
  uint64_t size = 1024ull * MIB, offset = 0;
  unsigned n = 0;

  while (offset < size) {
    uint64_t length = nbd_range_length (size - offset, 4);
    g_assert_cmpuint (n, <, G_N_ELEMENTS (expected) + 1);
    if (n < G_N_ELEMENTS (expected))
      g_assert_cmpuint (length, ==, (uint64_t) expected[n] * MIB);
    offset += length;
    n++;
  }
  g_assert_cmpuint (offset, ==, size);
  g_assert_cmpuint (n, ==, G_N_ELEMENTS (expected));
}

static void
test_messages (void)
{
  struct nbd_range_report r = { 1234567, -1, 77, 88, 9 }, back;
  struct nbd_range_grant g = { NBD_RANGE_COPY_OVER, 1u << 30, 5 }, gback;
  uint8_t wire[NBD_RANGE_REPORT_SIZE + 1], gwire[NBD_RANGE_GRANT_SIZE];

  /* Every byte of the wire is written: no padding reaches the socket. */
  memset (wire, 0xAA, sizeof wire);
  nbd_range_report_encode (&r, wire);
  g_assert_cmpuint (wire[NBD_RANGE_REPORT_SIZE], ==, 0xAA);
  g_assert_cmpuint (wire[0], ==, 1234567 & 0xFF);
  g_assert_true (nbd_range_report_decode (wire, NBD_RANGE_REPORT_SIZE, &back));
  g_assert_cmpuint (back.size, ==, r.size);
  g_assert_cmpint (back.index, ==, -1);
  g_assert_cmpuint (back.data_bytes, ==, 77);
  g_assert_cmpuint (back.same_bytes, ==, 88);
  g_assert_cmpuint (back.n_blocks, ==, 9);
  g_assert_false (nbd_range_report_decode (wire, NBD_RANGE_REPORT_SIZE - 1, &back));
  nbd_range_grant_encode (&g, gwire);
  g_assert_true (nbd_range_grant_decode (gwire, sizeof gwire, &gback));
  g_assert_cmpint (gback.index, ==, NBD_RANGE_COPY_OVER);
  g_assert_cmpuint (gback.offset, ==, g.offset);
  g_assert_cmpuint (gback.length, ==, 5);
  g_assert_false (nbd_range_grant_decode (gwire, sizeof gwire - 1, &gback));
}

/* A row per case of remote_copy_exit_code's comment. */
static void
test_copy_exit_code (void)
{
  const int term = FERRY_EXIT_SIGTERM;

  /* All well. */
  g_assert_cmpint (remote_copy_exit_code (true, 0, 0, 0, 0, false), ==, FERRY_EXIT_OK);
  /* The receiver's failure wins (upload: the remote one). */
  g_assert_cmpint (remote_copy_exit_code (true, FERRY_EXIT_NBD, FERRY_EXIT_REMOTE_DIGEST, 0, 0, false),
                   ==, FERRY_EXIT_REMOTE_DIGEST);
  g_assert_cmpint (remote_copy_exit_code (false, FERRY_EXIT_DIGEST, FERRY_EXIT_REMOTE_NBD, 0, 0, false),
                   ==, FERRY_EXIT_DIGEST);
  /* ...unless it only saw the stream break because the sender failed. */
  g_assert_cmpint (remote_copy_exit_code (true, FERRY_EXIT_NBD, FERRY_EXIT_REMOTE_STREAM, 0, 0, false),
                   ==, FERRY_EXIT_NBD);
  g_assert_cmpint (remote_copy_exit_code (false, FERRY_EXIT_STREAM, FERRY_EXIT_REMOTE_NBD, 0, 0, false),
                   ==, FERRY_EXIT_REMOTE_NBD);
  /* A broken stream with no sender failure is the receiver's. */
  g_assert_cmpint (remote_copy_exit_code (false, FERRY_EXIT_STREAM, 0, 0, 0, false), ==,
                   FERRY_EXIT_STREAM);
  /* Then the sender's, then the transport's. */
  g_assert_cmpint (remote_copy_exit_code (true, FERRY_EXIT_NBD, 0, FERRY_EXIT_IO, 0, false), ==,
                   FERRY_EXIT_NBD);
  g_assert_cmpint (remote_copy_exit_code (true, 0, 0, FERRY_EXIT_IO, 0, false), ==, FERRY_EXIT_IO);
  /* The relay's idle timeout: the halves saw its cut. */
  g_assert_cmpint (remote_copy_exit_code (true, FERRY_EXIT_IO, FERRY_EXIT_REMOTE,
                                          FERRY_EXIT_TIMEOUT, 0, false), ==, FERRY_EXIT_TIMEOUT);
  g_assert_cmpint (remote_copy_exit_code (false, FERRY_EXIT_STREAM, FERRY_EXIT_REMOTE,
                                          FERRY_EXIT_TIMEOUT, 0, false), ==, FERRY_EXIT_TIMEOUT);
  /* A stop: halves that stopped, a cut stream and a lost relay are the stop's. */
  g_assert_cmpint (remote_copy_exit_code (true, term, term, 0, term, false), ==, term);
  g_assert_cmpint (remote_copy_exit_code (false, FERRY_EXIT_STREAM, term, 0, term, false), ==, term);
  g_assert_cmpint (remote_copy_exit_code (true, 0, 0, FERRY_EXIT_IO, term, false), ==, term);
  /* ...but a half that failed for a reason of its own wins. */
  g_assert_cmpint (remote_copy_exit_code (true, FERRY_EXIT_NBD, term, 0, term, false), ==,
                   FERRY_EXIT_NBD);
  /* On this host, a receiver's broken stream is 21, not 31. */
  g_assert_cmpint (remote_copy_exit_code (true, FERRY_EXIT_NBD, FERRY_EXIT_STREAM, 0, 0, true),
                   ==, FERRY_EXIT_NBD);
  /* Both halves completed: the stop changed nothing. */
  g_assert_cmpint (remote_copy_exit_code (true, 0, 0, 0, term, false), ==, FERRY_EXIT_OK);
}

static void
test_remote_exit_code (void)
{
  const int term = FERRY_EXIT_SIGTERM;

  g_assert_cmpint (remote_exit_code (0, NULL, 0, false), ==, FERRY_EXIT_OK);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_CONNECT, NULL, 0, false), ==, FERRY_EXIT_REMOTE_NBD);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_NBD, NULL, 0, false), ==, FERRY_EXIT_REMOTE_NBD);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_STREAM, NULL, 0, false), ==, FERRY_EXIT_REMOTE_STREAM);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_DIGEST, NULL, 0, false), ==, FERRY_EXIT_REMOTE_DIGEST);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_TOO_SMALL, NULL, 0, false), ==,
                   FERRY_EXIT_REMOTE_TOO_SMALL);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_IO, NULL, 0, false), ==, FERRY_EXIT_REMOTE);
  g_assert_cmpint (remote_exit_code (-1, NULL, 0, false), ==, FERRY_EXIT_REMOTE);
  g_assert_cmpint (remote_exit_code (-1, "KILL", 0, false), ==, FERRY_EXIT_REMOTE);
  /* After a stop: its own code, no status, or death by that signal. */
  g_assert_cmpint (remote_exit_code (term, NULL, term, false), ==, term);
  g_assert_cmpint (remote_exit_code (-1, NULL, term, false), ==, term);
  g_assert_cmpint (remote_exit_code (-1, "TERM", term, false), ==, term);
  g_assert_cmpint (remote_exit_code (-1, "KILL", term, false), ==, FERRY_EXIT_REMOTE);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_NBD, NULL, term, false), ==, FERRY_EXIT_REMOTE_NBD);
  /* A half on this host (a local copy with --streams): its own codes. */
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_TOO_SMALL, NULL, 0, true), ==, FERRY_EXIT_TOO_SMALL);
  g_assert_cmpint (remote_exit_code (FERRY_EXIT_CONNECT, NULL, 0, true), ==, FERRY_EXIT_CONNECT);
  g_assert_cmpint (remote_exit_code (-1, "KILL", 0, true), ==, FERRY_EXIT_REMOTE);
  g_assert_cmpint (remote_exit_code (-1, "TERM", term, true), ==, term);
  g_assert_cmpint (remote_exit_code (-1, NULL, 0, true), ==, FERRY_EXIT_REMOTE);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/range/schedule", test_schedule);
  g_test_add_func ("/range/messages", test_messages);
  g_test_add_func ("/exit/copy", test_copy_exit_code);
  g_test_add_func ("/exit/remote", test_remote_exit_code);
  return g_test_run ();
}
