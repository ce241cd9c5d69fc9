/* ferry tests: a libnbd client that tries to change a read-only export.
 *
 * nbd-write-client [--no-sr] -- CMD ARGS...   (socket activation, as
 * nbdcopy's [ CMD ]).  With libnbd's strict checks off it sends WRITE,
 * TRIM and WRITE_ZEROES although the export says read-only, and prints one
 * line per command: "write: <strerror>" ...; then a read and a flush,
 * which must succeed.  Exit 0 when all that ran, whatever the results. */
#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <libnbd.h>

static void
report (struct nbd_handle *h, const char *what, int r)
{
  printf ("%s: %s\n", what, r == 0 ? "ok" : strerror (nbd_get_errno ()));
  (void) h;
}

int
main (int argc, char **argv)
{
  static char buf[4096];
  struct nbd_handle *h = nbd_create ();
  int i = 1;

  if (h == NULL)
    return 1;
  nbd_set_strict_mode (h, 0);
  if (i < argc && strcmp (argv[i], "--no-sr") == 0) {
    nbd_set_request_structured_replies (h, false);
    i++;
  }
  if (i < argc && strcmp (argv[i], "--") == 0)
    i++;
  if (nbd_connect_systemd_socket_activation (h, argv + i) == -1) {
    fprintf (stderr, "%s\n", nbd_get_error ());
    return 1;
  }
  printf ("read_only: %d\n", nbd_is_read_only (h));
  printf ("structured: %d\n", nbd_get_structured_replies_negotiated (h));
  memset (buf, 0x5a, sizeof buf);
  report (h, "write", nbd_pwrite (h, buf, sizeof buf, 0, 0));
  report (h, "trim", nbd_trim (h, sizeof buf, 0, 0));
  report (h, "zero", nbd_zero (h, sizeof buf, 0, 0));
  report (h, "read", nbd_pread (h, buf, sizeof buf, 0, 0));
  report (h, "flush", nbd_flush (h, 0));
  nbd_shutdown (h, 0);
  nbd_close (h);
  return 0;
}
