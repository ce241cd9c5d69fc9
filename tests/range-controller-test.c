/* ferry: unit test of the remote copy's controller (range-controller.c):
 * the ranges it grants, reports folded in offset order whatever order they
 * come in, forged reports refused, a failure in the middle, a stop, and
 * the bound on the ranges done ahead (MAX_RANGES_AHEAD). */
#include <config.h>

#include <glib.h>
#include <string.h>

#include "error.h"
#include "range-controller.h"

#define MIB (1024u * 1024)
#define GIB (1024ull * MIB)

/* The block digest that the test's halves report for block @block: any
 * bytes will do, as long as each block's are its own. */
static void
block_digest (uint64_t block, uint8_t out[STREAM_DIGEST_SIZE])
{
  for (unsigned i = 0; i < STREAM_DIGEST_SIZE; i++)
    out[i] = (uint8_t) (block * 131 + i * 7 + (block >> 8));
}

/* A half's report of @range (index -1: none done) for an image of @size,
 * with @n_blocks digests and @extra bytes more than they take. */
static GByteArray *
make_report (uint64_t size, const struct nbd_range *range, uint32_t n_blocks, size_t extra)
{
  struct nbd_range_report report = { size, range ? range->index : -1, 0, 0, n_blocks };
  GByteArray *packet = g_byte_array_sized_new (RANGE_REPORT_ROOM);
  uint8_t header[NBD_RANGE_REPORT_SIZE], digest[STREAM_DIGEST_SIZE] = { 0 };

  nbd_range_report_encode (&report, header);
  g_byte_array_append (packet, header, sizeof header);
  for (uint32_t i = 0; i < n_blocks; i++) {
    block_digest (range->offset / STREAM_BLOCK_SIZE + i, digest);
    g_byte_array_append (packet, digest, sizeof digest);
  }
  for (size_t i = 0; i < extra; i++)
    g_byte_array_append (packet, digest, 1);
  return packet;
}

/* @holder reports its range (or none) as a half that did it well would;
 * the controller must take it. */
static void
report_done (struct range_controller *ctl, struct range_holder *holder, uint64_t size)
{
  struct nbd_range done = holder->range;
  bool none = done.index < 0;
  g_autoptr (GByteArray) packet = make_report (size, none ? NULL : &done,
                                               none ? 0 : nbd_range_blocks (&done, STREAM_BLOCK_SIZE),
                                               0);
  g_autoptr (GError) error = NULL;

  g_assert_true (range_controller_take_report (ctl, holder, packet->data, packet->len, &error));
  g_assert_no_error (error);
  g_assert_cmpint (holder->range.index, ==, -1);
}

/* @holder asks, and gets a range. */
static void
expect_grant (struct range_controller *ctl, struct range_holder *holder)
{
  struct nbd_range_grant grant;

  g_assert_cmpint (range_controller_next (ctl, holder, &grant), ==, RANGE_GRANT);
  g_assert_cmpint (grant.index, ==, holder->range.index);
  g_assert_cmpuint (grant.offset, ==, holder->range.offset);
  g_assert_cmpuint (grant.length, ==, holder->range.length);
  g_assert_false (holder->waiting);
}

static void
expect_next (struct range_controller *ctl, struct range_holder *holder, enum range_next want,
             int64_t want_index)
{
  struct nbd_range_grant grant;

  g_assert_cmpint (range_controller_next (ctl, holder, &grant), ==, want);
  if (want != RANGE_WAIT)
    g_assert_cmpint (grant.index, ==, want_index);
}

/* The image digest as doc/nbd-stream.md, section 5 defines it, straight
 * from the block digests: SHA-256 over all of them in offset order, then
 * the size, little-endian. */
static char *
direct_digest (uint64_t size)
{
  g_autoptr (GChecksum) sum = g_checksum_new (G_CHECKSUM_SHA256);
  uint64_t blocks = (size + STREAM_BLOCK_SIZE - 1) / STREAM_BLOCK_SIZE;
  uint8_t digest[STREAM_DIGEST_SIZE], le[8];

  for (uint64_t b = 0; b < blocks; b++) {
    block_digest (b, digest);
    g_checksum_update (sum, digest, sizeof digest);
  }
  for (int i = 0; i < 8; i++)
    le[i] = size >> (8 * i);
  g_checksum_update (sum, le, sizeof le);
  return g_strdup (g_checksum_get_string (sum));
}

/* The ranges granted are nbd_range_length's schedule, back to back, then
 * none is left. */
static void
test_schedule (void)
{
  const uint64_t size = GIB;
  g_autoptr (RangeController) ctl = range_controller_new (4);
  struct range_holder h = RANGE_HOLDER_INIT;
  uint64_t offset = 0, n = 0;

  g_assert_cmpuint (range_controller_size (ctl), ==, 0);
  report_done (ctl, &h, size);
  g_assert_cmpuint (range_controller_size (ctl), ==, size);
  g_assert_cmpuint (range_controller_n_ranges (ctl), ==, 15);
  while (offset < size) {
    expect_grant (ctl, &h);
    g_assert_cmpint (h.range.index, ==, (int64_t) n);
    g_assert_cmpuint (h.range.offset, ==, offset);
    g_assert_cmpuint (h.range.length, ==, nbd_range_length (size - offset, 4));
    offset += h.range.length;
    n++;
    report_done (ctl, &h, size);
  }
  g_assert_cmpuint (n, ==, 15);
  expect_next (ctl, &h, RANGE_NONE_LEFT, NBD_RANGE_NONE_LEFT);
  g_assert_cmpuint (h.done.ranges, ==, 15);
  g_assert_cmpuint (h.done.bytes, ==, size);
  g_assert_true (range_controller_check_complete (ctl, NULL));
}

/* Four holders whose reports come in another order than their ranges':
 * the composed digest is the one computed straight from the blocks.  An
 * odd size: the last block is short. */
static void
test_out_of_order (void)
{
  const uint64_t size = GIB + 12345;
  g_autoptr (RangeController) ctl = range_controller_new (4);
  struct range_holder h[4] = { RANGE_HOLDER_INIT, RANGE_HOLDER_INIT, RANGE_HOLDER_INIT,
                               RANGE_HOLDER_INIT };
  /* Who reports next, round after round: the last one granted first. */
  static const unsigned order[] = { 3, 1, 0, 2 };
  g_autoptr (GError) missing = NULL;
  g_autofree char *want = direct_digest (size), *got = NULL;
  bool left = true;

  for (unsigned i = 0; i < 4; i++) {
    report_done (ctl, &h[i], size);
    expect_grant (ctl, &h[i]);
  }
  g_assert_null (range_controller_digest (ctl));
  while (left) {
    left = false;
    for (unsigned k = 0; k < 4; k++) {
      struct range_holder *one = &h[order[k]];
      struct nbd_range_grant grant;
      if (one->range.index < 0)
        continue;
      report_done (ctl, one, size);
      if (range_controller_next (ctl, one, &grant) == RANGE_GRANT)
        left = true;
      else
        g_assert_cmpint (grant.index, ==, NBD_RANGE_NONE_LEFT);
    }
    for (unsigned k = 0; k < 4; k++)
      left |= h[k].range.index >= 0;
    if (left)
      g_assert_null (range_controller_digest (ctl));
  }
  g_assert_true (range_controller_check_complete (ctl, &missing));
  g_assert_no_error (missing);
  got = range_controller_digest (ctl);
  g_assert_cmpstr (got, ==, want);
  /* Asking again gives the same: the sum stays open. */
  g_free (got);
  got = range_controller_digest (ctl);
  g_assert_cmpstr (got, ==, want);
  g_assert_cmpuint (range_controller_done (ctl)->bytes, ==, size);
  g_assert_cmpuint (h[0].done.bytes + h[1].done.bytes + h[2].done.bytes + h[3].done.bytes,
                    ==, size);
}

/* A controller with holders @a and @b, each holding a range. */
static struct range_controller *
two_holders (uint64_t size, struct range_holder *a, struct range_holder *b)
{
  struct range_controller *ctl = range_controller_new (2);

  report_done (ctl, a, size);
  expect_grant (ctl, a);
  report_done (ctl, b, size);
  expect_grant (ctl, b);
  return ctl;
}

/* @packet, its report changed to say @data_bytes and @same_bytes. */
static GByteArray *
with_counts (GByteArray *packet, uint64_t data_bytes, uint64_t same_bytes)
{
  struct nbd_range_report report;

  g_assert_true (nbd_range_report_decode (packet->data, packet->len, &report));
  report.data_bytes = data_bytes;
  report.same_bytes = same_bytes;
  nbd_range_report_encode (&report, packet->data);
  return packet;
}

/* @packet from @holder is refused with @message, and changes nothing. */
static void
expect_refused (struct range_controller *ctl, struct range_holder *holder, GByteArray *packet,
                const char *message)
{
  g_autoptr (GError) error = NULL;
  struct range_counts before = *range_controller_done (ctl);

  g_assert_false (range_controller_take_report (ctl, holder, packet->data, packet->len,
                                                &error));
  g_assert_error (error, FERRY_ERROR, FERRY_EXIT_STREAM);
  g_assert_cmpstr (error->message, ==, message);
  g_assert_cmpuint (range_controller_done (ctl)->ranges, ==, before.ranges);
  g_byte_array_unref (packet);
}

static void
test_forged (void)
{
  const uint64_t size = GIB;
  struct range_holder a = RANGE_HOLDER_INIT, b = RANGE_HOLDER_INIT;
  g_autoptr (RangeController) ctl = two_holders (size, &a, &b);
  uint32_t blocks = nbd_range_blocks (&a.range, STREAM_BLOCK_SIZE);
  struct nbd_range never = { 7, 7 * 128ull * MIB, a.range.length };
  struct nbd_range a_range = a.range;
  GByteArray *packet;
  g_autofree char *twice = NULL;

  /* Shorter than a report. */
  packet = make_report (size, NULL, 0, 0);
  g_byte_array_set_size (packet, NBD_RANGE_REPORT_SIZE - 1);
  expect_refused (ctl, &a, packet, "a short report (35 bytes)");
  /* Digests that do not fill the packet, or overflow it. */
  expect_refused (ctl, &a, make_report (size, &a.range, blocks, 1),
                  "a report of 65573 bytes for 2048 digests");
  packet = make_report (size, &a.range, blocks, 0);
  g_byte_array_set_size (packet, packet->len - 1);
  expect_refused (ctl, &a, packet, "a report of 65571 bytes for 2048 digests");
  /* Another image. */
  expect_refused (ctl, &a, make_report (size + 1, &a.range, blocks, 0),
                  "the image is 1073741825 bytes, where another stream found 1073741824");
  /* A range never granted, and one granted to another holder. */
  expect_refused (ctl, &a, make_report (size, &never, blocks, 0),
                  "a report for range 7, which it did not hold");
  expect_refused (ctl, &a, make_report (size, &b.range, blocks, 0),
                  "a report for range 1, which it did not hold");
  /* Its own range, with a digest too few. */
  expect_refused (ctl, &a, make_report (size, &a.range, blocks - 1, 0),
                  "a report for range 0, which it did not hold");
  /* More bytes sent as DATA, or as DATA and SAME, than the range has. */
  expect_refused (ctl, &a, with_counts (make_report (size, &a.range, blocks, 0),
                                        a.range.length + 1, 0),
                  "a report for range 0, which it did not hold");
  expect_refused (ctl, &a, with_counts (make_report (size, &a.range, blocks, 0),
                                        a.range.length, 1),
                  "a report for range 0, which it did not hold");
  /* Reported twice. */
  report_done (ctl, &a, size);
  twice = g_strdup_printf ("a report for range %" PRId64 ", which it did not hold",
                           a_range.index);
  expect_refused (ctl, &a, make_report (size, &a_range, blocks, 0), twice);
  g_assert_cmpuint (range_controller_done (ctl)->ranges, ==, 1);
}

/* A failure in the middle: the first one's error stays, every holder gets
 * COPY_OVER, and reports no longer count. */
static void
test_failure (void)
{
  const uint64_t size = GIB;
  struct range_holder a = RANGE_HOLDER_INIT, b = RANGE_HOLDER_INIT;
  g_autoptr (RangeController) ctl = two_holders (size, &a, &b);
  uint32_t blocks = nbd_range_blocks (&a.range, STREAM_BLOCK_SIZE);
  g_autoptr (GByteArray) late = make_report (size, &b.range, blocks, 0);
  g_autoptr (GError) error = NULL;

  report_done (ctl, &a, size);
  g_assert_null (range_controller_error (ctl));
  range_controller_fail (ctl, g_error_new_literal (g_quark_from_static_string ("t"), 1, "first"));
  range_controller_fail (ctl, g_error_new_literal (g_quark_from_static_string ("t"), 2, "second"));
  range_controller_fail (ctl, NULL);
  g_assert_cmpstr (range_controller_error (ctl)->message, ==, "first");
  g_assert_cmpint (range_controller_error (ctl)->code, ==, 1);
  expect_next (ctl, &a, RANGE_COPY_OVER, NBD_RANGE_COPY_OVER);
  g_assert_true (range_controller_take_report (ctl, &b, late->data, late->len, &error));
  g_assert_cmpuint (range_controller_done (ctl)->ranges, ==, 1);
  g_assert_cmpint (b.range.index, ==, 1);
  expect_next (ctl, &b, RANGE_COPY_OVER, NBD_RANGE_COPY_OVER);
  g_assert_null (range_controller_digest (ctl));
}

/* A failure that its caller reports itself: no error, but the copy is
 * over all the same, and a later error does not replace it. */
static void
test_failure_elsewhere (void)
{
  struct range_holder a = RANGE_HOLDER_INIT, b = RANGE_HOLDER_INIT;
  g_autoptr (RangeController) ctl = two_holders (GIB, &a, &b);

  range_controller_fail (ctl, NULL);
  range_controller_fail (ctl, g_error_new_literal (g_quark_from_static_string ("t"), 2, "late"));
  g_assert_null (range_controller_error (ctl));
  expect_next (ctl, &a, RANGE_COPY_OVER, NBD_RANGE_COPY_OVER);
}

/* A stop: no range more, and what is missing is said. */
static void
test_stop (void)
{
  const uint64_t size = GIB;
  struct range_holder a = RANGE_HOLDER_INIT, b = RANGE_HOLDER_INIT;
  g_autoptr (RangeController) ctl = two_holders (size, &a, &b);
  g_autoptr (GError) missing = NULL, ended = NULL;
  g_autofree char *missing_message = NULL;

  range_controller_stop (ctl);
  report_done (ctl, &b, size);
  expect_next (ctl, &b, RANGE_NONE_LEFT, NBD_RANGE_NONE_LEFT);
  /* @a still holds range 0: its channel may not end well. */
  g_assert_true (range_holder_check_ended (&b, NULL));
  g_assert_false (range_holder_check_ended (&a, &ended));
  g_assert_cmpstr (ended->message, ==,
                   "it ended without finishing the range at offset 0 (134217728 bytes)");
  g_assert_false (range_controller_check_complete (ctl, &missing));
  g_assert_cmpint (missing->code, ==, FERRY_EXIT_STREAM);
  missing_message = g_strdup_printf ("the streams ended with 1 of %" PRIu64 " ranges copied "
                                     "(the one at offset 0 was not)",
                                     range_controller_n_ranges (ctl));
  g_assert_cmpstr (missing->message, ==, missing_message);
}

/* One holder sits on range 0 while another does the next ones: after
 * MAX_RANGES_AHEAD of them it waits, and once range 0 comes in, it goes on
 * at the next range. */
static void
test_ahead (void)
{
  const uint64_t size = 1024 * GIB;
  struct range_holder slow = RANGE_HOLDER_INIT, fast = RANGE_HOLDER_INIT;
  g_autoptr (RangeController) ctl = two_holders (size, &slow, &fast);
  g_autofree char *missing_message = NULL;
  g_autoptr (GError) missing = NULL;

  g_assert_cmpint (slow.range.index, ==, 0);
  for (int64_t i = 1; i < MAX_RANGES_AHEAD; i++) {
    g_assert_cmpint (fast.range.index, ==, i);
    report_done (ctl, &fast, size);
    if (i + 1 < MAX_RANGES_AHEAD)
      expect_grant (ctl, &fast);
  }
  expect_next (ctl, &fast, RANGE_WAIT, 0);
  g_assert_true (fast.waiting);
  g_assert_cmpint (fast.range.index, ==, -1);
  g_assert_false (range_controller_check_complete (ctl, &missing));
  missing_message = g_strdup_printf ("the streams ended with %d of %" PRIu64 " ranges copied "
                                     "(the one at offset 0 was not)", MAX_RANGES_AHEAD - 1,
                                     range_controller_n_ranges (ctl));
  g_assert_cmpstr (missing->message, ==, missing_message);
  /* Still waiting, until range 0 is in. */
  expect_next (ctl, &fast, RANGE_WAIT, 0);
  report_done (ctl, &slow, size);
  expect_grant (ctl, &fast);
  g_assert_cmpint (fast.range.index, ==, MAX_RANGES_AHEAD);
  g_assert_false (fast.waiting);
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/controller/schedule", test_schedule);
  g_test_add_func ("/controller/out-of-order", test_out_of_order);
  g_test_add_func ("/controller/forged", test_forged);
  g_test_add_func ("/controller/failure", test_failure);
  g_test_add_func ("/controller/failure-elsewhere", test_failure_elsewhere);
  g_test_add_func ("/controller/stop", test_stop);
  g_test_add_func ("/controller/ahead", test_ahead);
  return g_test_run ();
}
