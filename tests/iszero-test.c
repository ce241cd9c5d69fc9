/* Unit test of the zero test (src/stream/module/iszero.h): every length around the
 * 16-byte head, a non-zero byte at every position of short and long
 * blocks (the first, the last, one past the head), and buffers that do
 * not start on an aligned address. */
#include <glib.h>
#include <string.h>

#include "iszero.h"

static void
test_empty (void)
{
  g_assert_true (is_zero ((const uint8_t *) "x", 0));
}

static void
test_all_zero (void)
{
  g_autofree uint8_t *buf = g_malloc0 (70000);

  for (size_t len = 0; len <= 40; len++)
    g_assert_true (is_zero (buf, len));
  g_assert_true (is_zero (buf, 65536));
  g_assert_true (is_zero (buf + 3, 65536));
}

/* One non-zero byte anywhere makes a block data, whatever its length. */
static void
test_one_byte_set (void)
{
  g_autofree uint8_t *buf = g_malloc0 (4100);
  const size_t lens[] = { 1, 15, 16, 17, 31, 32, 33, 4096 };

  for (size_t l = 0; l < G_N_ELEMENTS (lens); l++)
    for (size_t at = 0; at < lens[l]; at++) {
      buf[1 + at] = 0x80;
      g_assert_false (is_zero (buf + 1, lens[l]));
      buf[1 + at] = 0;
      g_assert_true (is_zero (buf + 1, lens[l]));
    }
}

/* The stream's case: a NUL block whose last byte alone is set. */
static void
test_last_byte (void)
{
  g_autofree uint8_t *buf = g_malloc0 (2 * 1024 * 1024);

  buf[2 * 1024 * 1024 - 1] = 1;
  g_assert_false (is_zero (buf, 2 * 1024 * 1024));
  g_assert_true (is_zero (buf, 2 * 1024 * 1024 - 1));
}

int
main (int argc, char **argv)
{
  g_test_init (&argc, &argv, NULL);
  g_test_add_func ("/iszero/empty", test_empty);
  g_test_add_func ("/iszero/all-zero", test_all_zero);
  g_test_add_func ("/iszero/one-byte-set", test_one_byte_set);
  g_test_add_func ("/iszero/last-byte", test_last_byte);
  return g_test_run ();
}
