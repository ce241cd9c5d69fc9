/* ferry: libFuzzer target over a ranged stream's return direction, as a
 * sender takes it from its remote receiver (src/stream/module/nbd-ranges.c:
 * READY, range requests, block digests with their CRC).
 *
 * Input: a settings byte (bits 0-1: the export's size; bits 2-7: the
 * order of the takes), then the bytes the receiver sent, which arrive
 * through a pipe whose other end is closed after them.  A take must never
 * crash or read out of bounds; a request it accepts lies inside the
 * export, on whole blocks; digests it hands out are the range's block
 * count's worth; every failure says what it is, and end of input is one.
 * With -DNBD_RANGES_FUZZ_SEEDS: a program that writes real messages (the
 * nbd_range_write_* functions) as seeds into the directory it is given. */
#include <config.h>

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nbd-ranges.h"

#define B STREAM_BLOCK_SIZE

static const uint64_t sizes[] = { 0, 3 * B + 17, 64 * B, 1ull << 40 };

/* The range a take of digests expects, after the requests taken so far. */
static struct nbd_range
expected (const struct nbd_range *requested, uint64_t size)
{
  if (requested->index >= 0 && requested->length > 0)
    return *requested;
  return (struct nbd_range) { 0, 0, MIN (size, 16 * (uint64_t) B) };
}

#ifndef NBD_RANGES_FUZZ_SEEDS
int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
  struct nbd_range_input in;
  struct nbd_range requested = { -1, 0, 0 };
  bool kicked = false;
  int fds[2];

  if (size < 1 || size > 60000 || pipe (fds) != 0)
    return 0;
  uint64_t export_size = sizes[data[0] & 3];
  unsigned order = data[0] >> 2;
  if (write (fds[1], data + 1, size - 1) != (ssize_t) (size - 1))
    abort ();
  close (fds[1]);
  fcntl (fds[0], F_SETFL, O_NONBLOCK);
  nbd_range_input_init (&in, fds[0], &kicked);
  for (unsigned step = 0;; step++) {
    GError *error = NULL;
    enum nbd_range_take taken;
    unsigned op = step == 0 && !(order & 1) ? 0 : 1 + ((order >> (step % 5)) & 1);
    if (op == 0) {
      taken = nbd_range_take_ready (&in, &error);
    } else if (op == 1) {
      struct nbd_range r;
      taken = nbd_range_take_request (&in, export_size, &r, &error);
      if (taken == NBD_RANGE_TAKEN && r.index >= 0) {
        if (r.length == 0 || r.offset % B || r.offset + r.length > export_size ||
            (r.length % B && r.offset + r.length != export_size) || r.length > NBD_RANGE_MAX)
          abort ();
        requested = r;
      }
    } else {
      struct nbd_range r = expected (&requested, export_size);
      const uint8_t *digests = NULL;
      taken = nbd_range_take_digests (&in, &r, &digests, &error);
      if (taken == NBD_RANGE_TAKEN) {
        volatile uint8_t sum = 0;
        /* Every byte handed out is inside the buffer (ASan). */
        for (size_t i = 0; i < nbd_range_blocks (&r, B) * STREAM_DIGEST_SIZE; i++)
          sum ^= digests[i];
        (void) sum;
      }
    }
    /* The writer is closed: every take comes to a message or a failure. */
    if (taken == NBD_RANGE_WAIT)
      abort ();
    if (taken == NBD_RANGE_FAILED) {
      if (error == NULL || error->message[0] == '\0')
        abort ();
      g_error_free (error);
      break;
    }
  }
  nbd_range_input_clear (&in);
  close (fds[0]);
  return 0;
}
#else
/* One seed: the settings byte, then what @write_messages writes. */
static void
seed (const char *dir, const char *name, uint8_t settings,
      void (*write_messages) (int fd, uint64_t size))
{
  g_autofree char *path = g_build_filename (dir, name, NULL);
  int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC, 0644);

  if (fd < 0 || write (fd, &settings, 1) != 1)
    exit (1);
  write_messages (fd, sizes[settings & 3]);
  close (fd);
}

static void
ready_then_requests (int fd, uint64_t size)
{
  struct nbd_range r = { 0, 0, 16 * B }, none = { -1, 0, 0 };
  g_autofree uint8_t *digests = g_malloc0 (16 * STREAM_DIGEST_SIZE);

  nbd_range_write_ready (fd, NULL);
  nbd_range_write_request (fd, &r, size, NULL);
  nbd_range_write_digests (fd, &r, digests, NULL);
  nbd_range_write_request (fd, &none, size, NULL);
}

static void
digests_only (int fd, uint64_t size)
{
  struct nbd_range r = { 0, 0, MIN (size, 16 * (uint64_t) B) };
  g_autofree uint8_t *digests = g_malloc (16 * STREAM_DIGEST_SIZE);

  memset (digests, 0xa5, 16 * STREAM_DIGEST_SIZE);
  nbd_range_write_digests (fd, &r, digests, NULL);
  nbd_range_write_digests (fd, &r, digests, NULL);
}

int
main (int argc, char **argv)
{
  if (argc != 2)
    return 2;
  /* Orders: READY first, then requests and digests alternating (0x50:
   * request, digests, request...), or digests only (0xfc). */
  seed (argv[1], "ready-requests-64", 0x50 | 2, ready_then_requests);
  seed (argv[1], "ready-requests-huge", 0x50 | 3, ready_then_requests);
  seed (argv[1], "digests-short", 0xfc | 1, digests_only);
  seed (argv[1], "digests-64", 0xfc | 2, digests_only);
  return 0;
}
#endif
