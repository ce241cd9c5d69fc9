/* ferry: NBD stream mode's options, their checks, and the summary. */
#include <config.h>

#include <dlfcn.h>
#include <errno.h>
#include <malloc.h>
#include <poll.h>
#include <signal.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "deferred-line.h"
#include "error.h"
#include "image-format.h"
#include "message.h"
#include "nbd-stream.h"
#include "nbd-stream-format.h"
#include "signal-watch.h"
#include "stats.h"

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
  return o->send || o->receive || o->digest || o->remote_send || o->remote_receive;
}

bool
nbd_stream_validate (const struct nbd_stream_options *o, GError **error)
{
  const char *uri = o->send ? o->send : o->receive ? o->receive : o->digest ? o->digest : "";
  const char *bad = NULL;

  bool receives = o->receive || o->remote_receive;

  if (!!o->send + !!o->receive + !!o->digest > 1)
    bad = "--nbd-send, --nbd-receive and --nbd-digest exclude each other";
  else if (o->remote_send && o->remote_receive)
    bad = "--remote-nbd-send and --remote-nbd-receive exclude each other";
  else if ((o->remote_receive && !o->send) || (o->remote_send && !o->receive))
    bad = "--remote-nbd-receive goes with --nbd-send, --remote-nbd-send with --nbd-receive";
  else if ((o->remote_send && o->remote_send[0] == '[') ||
           (o->remote_receive && o->remote_receive[0] == '['))
    bad = "the remote export must be a URI or a path, not '[ CMD ARGS... ]'";
  else if (o->raw && (o->remote_send || o->remote_receive))
    bad = "--raw does not go with --remote-nbd-send or --remote-nbd-receive";
  else if (strcmp (uri, "[") == 0 && !o->command)
    bad = "expected '[ CMD ARGS... ]' after '['";
  else if (o->command && strcmp (uri, "[") != 0)
    bad = "'[ CMD ARGS... ]' must be the value of --nbd-send, --nbd-receive or --nbd-digest";
  else if (o->raw && o->digest)
    bad = "--raw goes with --nbd-send or --nbd-receive";
  else if ((o->destination_is_zero || o->allocated) && !receives)
    bad = "--destination-is-zero and --allocated go with --nbd-receive or --remote-nbd-receive";
  else if (o->no_extents && o->receive && !o->remote_send)
    bad = "--no-extents goes with --nbd-send, --remote-nbd-send or --nbd-digest";
  else if (o->streams && !o->remote_send && !o->remote_receive)
    bad = "--streams goes with --remote-nbd-send or --remote-nbd-receive";
  else if (o->session_per_stream && ((!o->remote_send && !o->remote_receive) || o->same_host ||
                                     o->streams == 1 || (o->streams == 0 && o->no_verify)))
    bad = "--session-per-stream goes with a copy over ssh (--remote-nbd-send or "
          "--remote-nbd-receive) and --streams of 2 or more";
  else if (o->streams > 1 && o->no_verify)
    bad = "--no-verify goes with --streams=1: the ranges of more streams are checked by "
          "their digests";
  else if (o->ranged && (o->raw || o->digest || (!o->send && !o->receive) ||
                         o->remote_send || o->remote_receive))
    bad = "--ranged goes with --nbd-send or --nbd-receive (it is the remote half of --streams)";
  else if (o->delta && !o->ranged && ((!o->remote_send && !o->remote_receive) ||
                                      o->streams == 1 || o->no_verify))
    bad = "--delta goes with ferry copy, --remote-nbd-send or --remote-nbd-receive, --streams "
          "of 2 or more and no --no-verify (the ranged stream carries the destination's "
          "digests)";
  else if (o->delta && o->destination_is_zero)
    bad = "--delta and --destination-is-zero exclude each other (a delta's destination holds "
          "data, which ZERO records must overwrite)";
  else if (o->compress && (o->raw || o->digest || (!o->send && !o->remote_send)))
    bad = "--compress goes with --nbd-send or --remote-nbd-send (a receiver learns it "
          "from the stream), not with --raw";
  else if (o->connections > NBD_STREAM_MAX_CONNECTIONS)
    bad = "--connections: expected 1 to 4";
  if (bad)
    return ferry_set_error (error, FERRY_EXIT_USAGE, "%s", bad);
  return nbd_stream_validate_sizes (o, error);
}

bool
nbd_stream_validate_sizes (const struct nbd_stream_options *o, GError **error)
{
  if (o->request_size < STREAM_BLOCK_SIZE || o->request_size > STREAM_MAX_DATA)
    return ferry_set_error (error, FERRY_EXIT_USAGE,
                            "invalid --request-size '%zu': expected %u to %u bytes",
                            o->request_size, STREAM_BLOCK_SIZE, (unsigned) STREAM_MAX_DATA);
  if (o->in_flight < STREAM_BLOCK_SIZE)
    return ferry_set_error (error, FERRY_EXIT_USAGE,
                            "invalid --in-flight '%zu': expected %u to 1G bytes",
                            o->in_flight, STREAM_BLOCK_SIZE);
  return true;
}

void
nbd_stream_options_clear (struct nbd_stream_options *o)
{
  g_clear_pointer (&o->command, g_free);
}

/* The module beside the executable (a build tree), else the installed one. */
static void *
load_module (GError **error)
{
  static const char name[] = "ferry-nbd-stream.so";
  g_autofree char *exe = g_file_read_link ("/proc/self/exe", NULL);
  g_autofree char *exe_dir = exe ? g_path_get_dirname (exe) : NULL;
  g_autofree char *beside = exe_dir ? g_build_filename (exe_dir, name, NULL) : NULL;
  g_autofree char *installed = g_build_filename (FERRY_MODULE_DIR, name, NULL);
  const char *path = beside && g_file_test (beside, G_FILE_TEST_EXISTS) ? beside : installed;
  void *module = dlopen (path, RTLD_NOW | RTLD_LOCAL);

  if (module == NULL)
    ferry_set_error (error, FERRY_EXIT_FAILURE, "cannot load the NBD stream module: %s",
                     dlerror ());
  return module;
}

void
nbd_stream_keep_freed_memory (void)
{
  /* Setting one threshold turns off glibc's dynamic choice of both. */
  mallopt (M_MMAP_THRESHOLD, 64 * 1024 * 1024);
  mallopt (M_TRIM_THRESHOLD, 256 * 1024 * 1024);
}

/* gzip's and zstd's rule: a stream is not for a terminal, and does not
 * come from one. */
static bool
check_not_terminal (const struct nbd_stream_options *o, GError **error)
{
  const char *what = o->raw ? "raw image bytes" : "an NBD stream";

  if (o->send && !o->remote_receive && isatty (STDOUT_FILENO))
    return ferry_set_error (error, FERRY_EXIT_USAGE, "refusing to write %s to a terminal "
                            "(redirect stdout, or pipe it into ferry --nbd-receive)", what);
  if (o->receive && !o->remote_send && isatty (STDIN_FILENO))
    return ferry_set_error (error, FERRY_EXIT_USAGE, "refusing to read %s from a terminal "
                            "(redirect stdin from ferry --nbd-send)", what);
  return true;
}

static void
ignore_signal (int signum, void *data)
{
}

/* Until stops_wait: a stop ends ferry at once, with "stopped by SIGTERM"
 * and @suffix (" while ...\n"), before anything is read or written.  The
 * suffix first: a local half's stops come unblocked, at once. */
static struct signal_watch *
stops_exit_at_once (const char *suffix)
{
  signal_watch_exit_on_stop (suffix);
  return signal_watch_new (ignore_signal, NULL);
}

/* From then on, the stops wait blocked for the module's watch. */
static void
stops_wait (struct signal_watch *stops)
{
  signal_watch_hand_over (stops);
  signal_watch_exit_on_stop (NULL);
}

/* @header's bytes from stdin; false at its end before them. */
static bool
read_header (uint8_t *header, size_t *have)
{
  while (*have < STREAM_HEADER_SIZE) {
    ssize_t n = read (STDIN_FILENO, header + *have, STREAM_HEADER_SIZE - *have);
    if (n > 0)
      *have += n;
    else if (n == 0 || (errno != EINTR && errno != EAGAIN))
      return false;
    else if (errno == EAGAIN)
      signal_watch_poll (STDIN_FILENO, POLLIN, -1);
  }
  return true;
}

/* A DEST in one of qemu's formats that does not exist and has no
 * --create-size (a download, or SRC an NBD export or a format whose size
 * ferry copy cannot tell) is created at the image size that the stream's
 * header gives: read it first, into @header, for the receiver to take
 * back.  False, with *@cut set if stdin ended first, if it does not
 * parse. */
static bool
size_from_stream_header (struct nbd_stream_options *o, uint8_t *header, bool *cut,
                         GError **error)
{
  struct stream_parser parser;
  struct stream_event event = { STREAM_EVENT_NONE };
  size_t have = 0;

  if (!o->receive || o->raw || o->create_size || !o->dst_format ||
      strcmp (o->dst_format, "raw") == 0 || !image_is_path (o->receive) ||
      (g_file_test (o->receive, G_FILE_TEST_EXISTS) &&
       !g_file_test (o->receive, G_FILE_TEST_IS_DIR)))
    return true;
  struct signal_watch *stops = stops_exit_at_once (" while waiting for the stream's header\n");
  bool whole = read_header (header, &have);
  stops_wait (stops);
  o->stdin_header = header;
  o->stdin_header_len = have;
  stream_parser_init (&parser);
  parser.accept_ranges = parser.allow_delta = true;
  stream_parser_feed (&parser, header, have, &event);
  if (event.kind == STREAM_EVENT_HEADER) {
    o->create_size = parser.header.size;
    return true;
  }
  *cut = !whole;
  if (*cut)
    stream_parser_eof (&parser);
  return ferry_set_error (error, FERRY_EXIT_STREAM, "%s", parser.error);
}

/* The image path among SOURCE, DEST and IMAGE, if there is one, as the
 * module opens it: the path itself (a raw image), or its qemu-nbd. */
static bool
resolve_image_path (struct nbd_stream_options *o, struct image_resolved *image,
                    GError **error)
{
  const char **path = o->send ? &o->send : o->receive ? &o->receive : &o->digest;
  bool writing = o->receive != NULL;

  if (!image_is_path (*path))
    return true;
  struct image_request request = {
    .path = *path, .writing = writing, .format = writing ? o->dst_format : o->src_format,
    .source_name = o->send ? NULL : o->source_name, .create_size = o->create_size, .name = o->image_name,
    /* The header read here: its size, even 0. */
    .create_empty = o->stdin_header_len > 0,
  };
  /* qemu-img's check or create takes a moment (or longer, with a backing
   * file on a slow server): a stop ends it there, with its line. */
  g_autofree char *opening = g_strdup_printf (" while opening %s\n",
                                              o->image_name ? o->image_name : *path);
  struct signal_watch *stops = stops_exit_at_once (opening);
  bool resolved = image_resolve (&request, image, error);

  stops_wait (stops);
  if (!resolved)
    return false;
  /* A new image reads as zeros: the ZERO records need no writes. */
  if (image->created && !o->delta)
    o->destination_is_zero = true;
  o->image_name = image->name;
  *path = image->path;
  if (image->command) {
    o->command = image->command;
    o->image_server = true;
    *path = "[";
  }
  return true;
}

int
nbd_stream_main (const struct nbd_stream_options *options)
{
  g_autoptr (GError) error = NULL;
  int (*run) (const struct nbd_stream_options *) = NULL;
  struct nbd_stream_options resolved = *options;
  const struct nbd_stream_options *o = &resolved;
  struct image_resolved image = { 0 };
  uint8_t header[STREAM_HEADER_SIZE];
  bool cut = false;
  void *module = NULL;
  int rc;

  nbd_stream_keep_freed_memory ();
  ferry_stats_set_string ("type", o->digest ? "digest" : o->send ? "send" : "receive");
  if (check_not_terminal (o, &error) &&
      size_from_stream_header (&resolved, header, &cut, &error) &&
      resolve_image_path (&resolved, &image, &error))
    module = load_module (&error);

  /* Never unloaded: its threads and sources may outlive the call. */
  if (module) {
    run = (int (*) (const struct nbd_stream_options *)) dlsym (module, "nbd_stream_module_run");
    if (run == NULL)
      ferry_set_error (&error, FERRY_EXIT_FAILURE, "cannot load the NBD stream module: %s",
                       dlerror ());
  }
  if (run == NULL) {
    /* A local half of the remote mode defers its line (deferred-line.h):
     * a download's, whose stream was cut short, as the remote's end
     * explains; an upload's, whose SRC did not open, so that the copy ends
     * before the remote receiver can add that its stream was empty. */
    if (!((cut || o->send) && o->report_fd > 0 &&
          deferred_line_send (o->report_fd, error->message, NULL)))
      ferry_error ("%s", error->message);
    rc = error->code;
  } else {
    rc = run (o);
  }
  image_resolved_clear (&image);
  return rc;
}

struct progress *
nbd_stream_progress_new (const struct nbd_stream_options *o, progress_sample_fn sample,
                         void *data)
{
  static const struct progress_counter counters[] = {
    { .label = "image" }, { .label = "data" }, { .label = "zero" }, { .label = "same" },
  };

  return progress_new (&o->progress, counters, G_N_ELEMENTS (counters) - !o->delta, sample,
                       data);
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

void
nbd_stream_record_summary (const struct nbd_stream_stats *st, const char *digest_hex)
{
  g_autoptr (StatsValue) o = NULL;

  if (!ferry_stats_enabled ())
    return;
  o = stats_object_new ();
  stats_object_set_int (o, "data", st->data_bytes);
  stats_object_set_int (o, "zero", st->zero_bytes);
  stats_object_set_int (o, "wire", st->wire_bytes);
  stats_object_set_int (o, "requests", st->requests);
  stats_object_set_int (o, "in_flight_avg",
                        st->in_flight_samples ? st->in_flight_sum / st->in_flight_samples : 0);
  stats_object_set_int (o, "in_flight_max", st->in_flight_max);
  ferry_stats_object_set_ms (o, (g_get_monotonic_time () - st->start_us) / 1e6);
  if (digest_hex && *digest_hex)
    stats_object_set_string (o, "digest", digest_hex);
  ferry_stats_merge (o);
}

enum nbd_stream_signal
nbd_stream_on_signal (struct nbd_stream_stop *stop, int signum, bool complete,
                      GError **error)
{
  const char *name = signal_watch_name (signum);
  bool first = stop->first == NULL;
  enum nbd_stream_signal action;
  g_autofree char *why = NULL;

  if (signum == SIGUSR1)
    return NBD_STREAM_SIGNAL_STATS;
  if (stop->cut)
    return NBD_STREAM_SIGNAL_IGNORE;
  if (first) {
    stop->first = name;
    stop->code = 128 + signum;
  }
  if (first && signum != SIGQUIT) {
    action = NBD_STREAM_SIGNAL_STOP;
    why = g_strdup_printf ("stopped by %s", name);
  } else {
    action = NBD_STREAM_SIGNAL_CUT;
    stop->cut = true;
    why = first ? g_strdup_printf ("stopped by %s: exiting at once", name)
                : g_strdup_printf ("stopped by %s, then %s: exiting at once", stop->first, name);
  }
  /* A failure before the signal is the one to report. */
  if ((*error == NULL || (*error)->code == stop->code) &&
      !(action == NBD_STREAM_SIGNAL_STOP && complete)) {
    g_clear_error (error);
    *error = g_error_new (FERRY_ERROR, stop->code, "%s", why);
  }
  return action;
}
