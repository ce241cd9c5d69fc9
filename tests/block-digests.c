/* The block digests of one range of an export (src/stream/module/nbd-block-digests.c,
 * which --delta compares), for tests/nbd-block-digests.sh and
 * nbd-remote-delta-resume.sh:
 *   block-digests [-v] URI OFFSET:LENGTH
 * prints one lower-case hex line per block of [OFFSET, +LENGTH), and with
 * -v a summary on stderr; failures are ferry's one line and exit code.
 * Linked against the stream module's sources, so that ferry ships no
 * test entry point. */
#include <config.h>

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "message.h"
#include "nbd-block-digests.h"
#include "export-open.h"

static void
on_digests (struct nbd_block_digests *d, const GError *error, void *data)
{
  g_main_loop_quit (data);
}

static int
print_digests (const struct nbd_block_digests *d, bool verbose)
{
  char hex[2 * BLKHASH_SIZE + 1];

  for (uint64_t i = 0; i < d->blocks; i++) {
    blkhash_hex (d->digests + i * BLKHASH_SIZE, hex);
    printf ("%s\n", hex);
  }
  if (fflush (stdout) != 0) {
    ferry_error ("cannot write the digests to stdout: %s", g_strerror (errno));
    return FERRY_EXIT_IO;
  }
  if (verbose)
    ferry_report ("block digests: blocks=%" PRIu64 " read=%" PRIu64 " zero_blocks=%" PRIu64
                  " requests=%" PRIu64, d->blocks, d->read_bytes, d->zero_blocks,
                  d->requests);
  return FERRY_EXIT_OK;
}

static int
digest_range (const struct nbd_stream_options *options, uint64_t offset, uint64_t length)
{
  struct nbd_export e = { 0 };
  bool kicked = false;
  g_autoptr (GError) error = NULL;
  g_autoptr (GMainLoop) loop = g_main_loop_new (NULL, FALSE);
  struct nbd_block_digests *d = NULL;
  int rc;

  e.kicked = &kicked;
  if (nbd_export_open (&e, options, options->digest, false, &error))
    d = nbd_block_digests_start (&e, e.size, offset, length, options->in_flight, on_digests,
                                 loop, &error);
  if (d) {
    /* A connection lost wakes the computation. */
    e.kicked = &d->kicked;
    g_main_loop_run (loop);
    if (d->error)
      error = g_error_copy (d->error);
  }
  if (error) {
    ferry_error ("%s", error->message);
    rc = error->code;
  } else {
    rc = print_digests (d, options->verbose);
    nbd_export_finish (&e);
  }
  nbd_export_close (&e);
  nbd_block_digests_free (d);
  return rc;
}

int
main (int argc, char **argv)
{
  struct nbd_stream_options options = {
    .request_size = NBD_STREAM_DEFAULT_REQUEST_SIZE,
    .in_flight = NBD_STREAM_DEFAULT_IN_FLIGHT,
  };
  guint64 offset, length;
  g_auto (GStrv) range = NULL;

  g_set_prgname ("ferry");
  if (argc > 1 && strcmp (argv[1], "-v") == 0) {
    options.verbose = true;
    argc--, argv++;
  }
  if (argc == 3)
    range = g_strsplit (argv[2], ":", 2);
  if (range == NULL || g_strv_length (range) != 2 ||
      !g_ascii_string_to_unsigned (range[0], 10, 0, G_MAXUINT64, &offset, NULL) ||
      !g_ascii_string_to_unsigned (range[1], 10, 0, G_MAXUINT64, &length, NULL)) {
    ferry_error ("usage: block-digests [-v] URI OFFSET:LENGTH");
    return FERRY_EXIT_USAGE;
  }
  options.digest = argv[1];
  return digest_range (&options, offset, length);
}
