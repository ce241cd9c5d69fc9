/* ferry: NBD stream mode's options, their checks, and the summary. */
#include <config.h>

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "error.h"
#include "message.h"
#include "nbd-stream.h"
#include "nbd-stream-format.h"
#include "transfer-progress.h"

/* GOption hands callbacks the group's data, which is not ours. */
static struct nbd_stream_options *parsed;

static gboolean
parse_progress (const char *name, const char *value, gpointer data, GError **error)
{
  if (!transfer_progress_parse (value ? value : "")) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid --progress=%s: expected --progress or --progress=fd:N", value);
    return FALSE;
  }
  g_free (parsed->progress);
  parsed->progress = g_strdup (value ? value : "");
  return TRUE;
}

const GOptionEntry *
nbd_stream_option_entries (struct nbd_stream_options *options)
{
  static GOptionEntry entries[] = {
    { "nbd-send", 0, 0, G_OPTION_ARG_STRING, NULL,
      "Write the NBD export SOURCE (a URI, or '[ CMD ARGS... ]') to stdout as a "
      "sparse, verified stream (doc/nbd-stream.md)", "SOURCE" },
    { "nbd-receive", 0, 0, G_OPTION_ARG_STRING, NULL,
      "Apply a stream from stdin to the NBD export DEST (a URI, or '[ CMD ARGS... ]')",
      "DEST" },
    { "nbd-digest", 0, 0, G_OPTION_ARG_STRING, NULL,
      "Print the block-hash digest (SHA-256, 64 KiB blocks) of an NBD export", "URI" },
    { "raw", 0, 0, G_OPTION_ARG_NONE, NULL,
      "With --nbd-send/--nbd-receive: plain image bytes, as nbdcopy URI - / nbdcopy - URI",
      NULL },
    { "connections", 0, 0, G_OPTION_ARG_INT, NULL,
      "NBD connections when the server allows multi-conn (default and at most 4)", "N" },
    { "no-extents", 0, 0, G_OPTION_ARG_NONE, NULL,
      "Do not ask the source for its allocation map (read everything, scan for zeros)",
      NULL },
    { "destination-is-zero", 0, 0, G_OPTION_ARG_NONE, NULL,
      "--nbd-receive: the destination reads as zeros already; skip ZERO records", NULL },
    { "allocated", 0, 0, G_OPTION_ARG_NONE, NULL,
      "--nbd-receive: write zeros allocated (NO_HOLE) instead of punching holes", NULL },
    { "no-verify", 0, 0, G_OPTION_ARG_NONE, NULL,
      "Leave the digest out of the stream, or do not check it", NULL },
    { "progress", 0, G_OPTION_FLAG_OPTIONAL_ARG, G_OPTION_ARG_CALLBACK, parse_progress,
      "Progress line on a terminal stderr; =fd:N: 'N/100' lines to fd N, as nbdcopy",
      "fd:N" },
    { "request-size", 0, 0, G_OPTION_ARG_STRING, NULL,
      "NBD read/write request size (default 2M; within the server's limits)", "BYTES" },
    { "in-flight", 0, 0, G_OPTION_ARG_STRING, NULL,
      "Bytes of NBD reads or writes in flight at most (default 64M)", "BYTES" },
    { NULL },
  };

  parsed = options;
  entries[0].arg_data = &options->send;
  entries[1].arg_data = &options->receive;
  entries[2].arg_data = &options->digest;
  entries[3].arg_data = &options->raw;
  entries[4].arg_data = &options->connections;
  entries[5].arg_data = &options->no_extents;
  entries[6].arg_data = &options->destination_is_zero;
  entries[7].arg_data = &options->allocated;
  entries[8].arg_data = &options->no_verify;
  entries[10].arg_data = &options->request_size_arg;
  entries[11].arg_data = &options->in_flight_arg;
  return entries;
}

void
nbd_stream_take_command (struct nbd_stream_options *options, int *argc, char **argv)
{
  int open = -1, close = -1;

  for (int i = 1; i < *argc && open < 0; i++)
    if (strcmp (argv[i], "[") == 0 || g_str_has_suffix (argv[i], "=["))
      open = i;
  if (open < 0)
    return;
  for (int i = *argc - 1; i > open; i--)
    if (strcmp (argv[i], "]") == 0) {
      close = i;
      break;
    }
  if (close < 0 || close == open + 1)
    return;                             /* the option check reports it */
  options->command = g_new0 (char *, close - open);
  for (int i = open + 1; i < close; i++)
    options->command[i - open - 1] = argv[i];
  /* Keep '[' (or '--nbd-send=[') as the option's value. */
  memmove (&argv[open + 1], &argv[close + 1], (*argc - close) * sizeof *argv);
  *argc -= close - open;
}

bool
nbd_stream_requested (const struct nbd_stream_options *o)
{
  return o->send || o->receive || o->digest;
}

/* BYTES with an optional K, M or G, from @min to @max, into *@out;
 * @value NULL leaves *@out. */
static bool
parse_bytes (const char *option, const char *value, uint64_t min, uint64_t max,
             uint64_t *out, GError **error)
{
  char *end;
  guint64 n, scale = 1;

  if (value == NULL)
    return true;
  n = g_ascii_strtoull (value, &end, 10);
  switch (g_ascii_toupper (*end)) {
  case 'K': scale = 1024; end++; break;
  case 'M': scale = 1024 * 1024; end++; break;
  case 'G': scale = 1024 * 1024 * 1024; end++; break;
  }
  if (end == value || *end || n > max / scale || n * scale < min) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE,
                 "invalid %s '%s': expected %" PRIu64 " to %" PRIu64 " bytes (K, M, G allowed)",
                 option, value, min, max);
    return false;
  }
  *out = n * scale;
  return true;
}

static bool
check_options (struct nbd_stream_options *o, int argc, char **argv, GError **error)
{
  const char *uri = o->send ? o->send : o->receive ? o->receive : o->digest;
  const char *bad = NULL;

  if (!!o->send + !!o->receive + !!o->digest > 1)
    bad = "--nbd-send, --nbd-receive and --nbd-digest exclude each other";
  else if (argc > 1)
    bad = "stream mode takes no ADDRESS";
  else if (strcmp (uri, "[") == 0 && !o->command)
    bad = "expected '[ CMD ARGS... ]' after '['";
  else if (o->command && strcmp (uri, "[") != 0)
    bad = "'[ CMD ARGS... ]' must be the value of --nbd-send, --nbd-receive or --nbd-digest";
  else if (o->raw && o->digest)
    bad = "--raw goes with --nbd-send or --nbd-receive";
  else if ((o->destination_is_zero || o->allocated) && !o->receive)
    bad = "--destination-is-zero and --allocated go with --nbd-receive";
  else if (o->no_extents && o->receive)
    bad = "--no-extents goes with --nbd-send or --nbd-digest";
  else if (o->connections < 0 || o->connections > NBD_STREAM_MAX_CONNECTIONS)
    bad = "--connections: expected 1 to 4";
  if (bad) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_USAGE, "%s%s%s", bad,
                 argc > 1 ? ": " : "", argc > 1 ? argv[1] : "");
    return false;
  }
  o->request_size = NBD_STREAM_DEFAULT_REQUEST_SIZE;
  o->in_flight = NBD_STREAM_DEFAULT_IN_FLIGHT;
  return parse_bytes ("--request-size", o->request_size_arg, STREAM_BLOCK_SIZE,
                      STREAM_MAX_DATA, &o->request_size, error) &&
         parse_bytes ("--in-flight", o->in_flight_arg, STREAM_BLOCK_SIZE, 1ull << 30,
                      &o->in_flight, error);
}

static void
options_clear (struct nbd_stream_options *o)
{
  g_free (o->command);
  g_free (o->send);
  g_free (o->receive);
  g_free (o->digest);
  g_free (o->progress);
  g_free (o->request_size_arg);
  g_free (o->in_flight_arg);
}

int
nbd_stream_main (struct nbd_stream_options *o, int argc, char **argv, bool verbose)
{
  g_autoptr (GError) error = NULL;
  int rc;

  if (!check_options (o, argc, argv, &error)) {
    ferry_error ("%s", error->message);
    options_clear (o);
    return FERRY_EXIT_USAGE;
  }
  o->verbose = verbose;
  rc = o->receive ? nbd_receive_main (o) : nbd_send_main (o, o->digest != NULL);
  options_clear (o);
  return rc;
}

void
nbd_stream_sample_in_flight (struct nbd_stream_stats *stats, uint64_t bytes)
{
  stats->in_flight_sum += bytes;
  stats->in_flight_samples++;
  if (bytes > stats->in_flight_max)
    stats->in_flight_max = bytes;
}

void
nbd_stream_print_summary (const char *mode, const struct nbd_stream_stats *st,
                          const char *digest_hex)
{
  double secs = (g_get_monotonic_time () - st->start_us) / 1e6;
  uint64_t avg = st->in_flight_samples ? st->in_flight_sum / st->in_flight_samples : 0;

  fprintf (stderr,
           "ferry: %s: data=%" PRIu64 " zero=%" PRIu64 " wire=%" PRIu64
           " requests=%" PRIu64 " in_flight_avg=%" PRIu64 " in_flight_max=%" PRIu64
           " seconds=%.3f%s%s\n",
           mode, st->data_bytes, st->zero_bytes, st->wire_bytes, st->requests, avg,
           st->in_flight_max, secs, digest_hex && *digest_hex ? " digest=" : "",
           digest_hex && *digest_hex ? digest_hex : "");
}
