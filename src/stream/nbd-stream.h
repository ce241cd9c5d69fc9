/* ferry: NBD stream mode (--nbd-send, --nbd-receive, --nbd-digest),
 * on libnbd's AIO API and the glib main loop.  The format is in
 * doc/nbd-stream.md and nbd-stream-format.h.  This is the half that is
 * linked into ferry (nbd-stream.c): options, limits, signals, progress
 * and the summary; it carries no libnbd.h.  The libnbd side is the
 * dlopened module (nbd-stream-module.c, nbd-export.h). */
#ifndef FERRY_NBD_STREAM_H
#define FERRY_NBD_STREAM_H

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "progress.h"

#define NBD_STREAM_MAX_CONNECTIONS 4
#define NBD_STREAM_DEFAULT_REQUEST_SIZE (2u * 1024 * 1024)
/* Bytes of image data held: reads, writes, records being read, the hash's
 * backlog.  32 MiB copies a dense 1 GiB as fast as 64 did (measured), and
 * RSS is this plus about 14 MiB: libraries' pages (11 MiB, with
 * libcrypto's 3.4) and the rest of the heap. */
#define NBD_STREAM_DEFAULT_IN_FLIGHT (32u * 1024 * 1024)
#define NBD_STREAM_REQUESTS_PER_CONNECTION 64
/* Block status looks this far ahead, one window at a time. */
#define NBD_STREAM_MAP_WINDOW (128u * 1024 * 1024)
/* Zero requests stay below 4 GiB: some servers refuse larger ones. */
#define NBD_STREAM_MAX_ZERO (1024u * 1024 * 1024)

/* The stream modes' options: main.c's option table writes them. */
struct nbd_stream_options {
  const char *send;           /* --nbd-send=SOURCE */
  const char *receive;        /* --nbd-receive=DEST */
  const char *digest;         /* --nbd-digest=IMAGE */
  const char *remote_send;    /* --remote-nbd-send=SOURCE: on the ssh:// host */
  const char *remote_receive; /* --remote-nbd-receive=DEST: on the ssh:// host */
  char **command;             /* with SOURCE/DEST/URI '[': the server command
                                 (pointers into argv; the array is ours), or
                                 an image path's qemu-nbd (image-format.h) */
  bool image_server;          /* @command is that qemu-nbd: its stderr is
                                 ferry's to report (image-server.h) */
  const char *src_format;     /* --src-format: a SOURCE path's qemu format;
                                 NULL or "auto": found from its header */
  const char *dst_format;     /* --dst-format: a DEST path's; NULL: raw */
  uint64_t create_size;       /* --create-size: a DEST path in a qemu format
                                 that does not exist is created this large;
                                 0: it must exist */
  const char *source_name;    /* --source-name: what a DEST path (or an
                                 --nbd-digest IMAGE, ferry copy
                                 --check-source's) that is a directory takes
                                 after it (ferry copy's basename of SRC) */
  const char *image_name;     /* --image-name, or the image path as given: for
                                 messages and the digest line; NULL: the URI,
                                 or the command's program */
  const uint8_t *stdin_header;   /* what nbd_stream_main read of stdin first
                                    (the stream's header, for a new DEST's
                                    size): the receiver takes it before stdin */
  size_t stdin_header_len;
  const char *remote_image_name;  /* ferry copy: the remote side as typed
                                     (HOST:PATH), the remote half's
                                     --image-name */
  bool same_host;             /* ferry copy of a local SRC to a local DST with
                                 --streams or --delta: the remote mode, with
                                 its "remote" halves run on this host as
                                 processes, without ssh (nbd-remote.c) */
  bool raw;                   /* plain image bytes instead of the stream */
  bool no_extents;            /* sender: ignore the server's allocation map */
  bool destination_is_zero;   /* receiver: skip ZERO records */
  bool allocated;             /* receiver: zero with NO_HOLE */
  bool no_verify;             /* no digest, in the stream or checked */
  bool compress;              /* --compress: the sender's DATA records go as
                                 zstd (CDATA) where that shrinks them */
  bool check_source;          /* ferry copy --check-source: SRC's digest read
                                 again at the end must be DST's */
  unsigned connections;       /* --connections=N; 0: up to 4 with multi-conn */
  size_t request_size;        /* --request-size, or the default */
  size_t in_flight;           /* --in-flight, or the default */
  struct progress_spec progress;  /* --progress, as for the relay */
  bool verbose;               /* -v: the summary at the end */
  unsigned streams;           /* --streams=N (remote mode); 0: not given */
  bool ranged;                /* --ranged: the ranged stream of --streams
                                 (doc/nbd-stream.md, section 8) */
  bool delta;                 /* --delta: with the ranged stream, only the blocks
                                 that differ from DEST's (SAME for the rest) */
  bool session_per_stream;    /* --session-per-stream: an ssh session for each
                                 stream (ssh-stream-sessions.h) */
  int control_fd;             /* a local half of --streams: its socket to the
                                 controller (nbd-ranges.h); 0: none */
  int report_fd;              /* a local half of the remote mode: its socket
                                 to the parent, for deferred_line_send;
                                 0: none */
};

/* Counters for --progress and the -v summary. */
struct nbd_stream_stats {
  uint64_t data_bytes, zero_bytes;   /* of the image, by how they crossed */
  uint64_t wire_bytes;        /* stream (or raw) bytes written or read */
  uint64_t requests;          /* NBD commands issued */
  uint64_t in_flight_sum, in_flight_samples;
  uint64_t in_flight_max;     /* bytes */
  int64_t start_us;
};

/* True when one of the stream modes was asked for. */
bool nbd_stream_requested (const struct nbd_stream_options *options);
/* The usage errors between the stream modes' options (main.c's validate). */
bool nbd_stream_validate (const struct nbd_stream_options *options, GError **error);
/* Its part that ferry copy and ferry digest share: --request-size and
 * --in-flight within their ranges. */
bool nbd_stream_validate_sizes (const struct nbd_stream_options *options, GError **error);
/* Runs the mode asked for and returns the exit code. */
int nbd_stream_main (const struct nbd_stream_options *options);
void nbd_stream_options_clear (struct nbd_stream_options *options);

/* Before option parsing: take a '[ CMD ARGS... ]' server command out of
 * argv (as nbdcopy accepts it), so that its options stay its own. */
void nbd_stream_take_command (struct nbd_stream_options *options, int *argc, char **argv);

/* The module's entry point (nbd-stream-module.c), which nbd_stream_main
 * finds by this name. */
int nbd_stream_module_run (const struct nbd_stream_options *options);

/* A stream mode, or the remote mode's parent, frees buffers all the time:
 * each request and record (up to --request-size), and libssh's packets.
 * glibc's default trim threshold hands their pages back to the kernel, and
 * the next buffer faults them in again, zeroed: a fifth of a dense copy's
 * CPU.  Keep them; the in-flight bound still caps how many are live.  For
 * these one-shot processes only: a forwarder's memory goes back. */
void nbd_stream_keep_freed_memory (void);

/* --progress: a line of three counters, "image" (bytes in offset order,
 * of the image's size), "data" and "zero", and with --delta a fourth,
 * "same" (the blocks DEST already had), which @sample fills in. */
struct progress *nbd_stream_progress_new (const struct nbd_stream_options *options,
                                          progress_sample_fn sample, void *data);

/* Signals in the stream modes, by the relay's rules (ferry(1), SIGNALS;
 * the watch is signal-watch.h's, set up by nbd_send_main and
 * nbd_receive_main). */
enum nbd_stream_signal {
  NBD_STREAM_SIGNAL_STATS,    /* SIGUSR1: the -v summary so far */
  NBD_STREAM_SIGNAL_STOP,     /* the first SIGTERM, SIGINT or SIGHUP: take no
                                 new work, let the commands in flight end
                                 (the receiver then flushes) */
  NBD_STREAM_SIGNAL_CUT,      /* a second signal, or SIGQUIT: end now */
  NBD_STREAM_SIGNAL_IGNORE,   /* a signal after the cut */
};

struct nbd_stream_stop {
  const char *first;          /* the first stopping signal's name; NULL before */
  int code;                   /* the exit code: 128 + its number */
  bool cut;                   /* NBD_STREAM_SIGNAL_CUT was given */
};

/* What @signum asks for.  For STOP and CUT, *@error (if NULL, or a
 * signal's before) becomes "stopped by SIGTERM" or "stopped by SIGTERM,
 * then SIGINT: exiting at once", with @stop->code (each half says how far
 * it got at its end).  A STOP once the copy is @complete (only its end is
 * left) sets no error. */
enum nbd_stream_signal nbd_stream_on_signal (struct nbd_stream_stop *stop, int signum,
                                             bool complete, GError **error);

/* The -v summary (nbd-stream.c). */
void nbd_stream_print_summary (const char *mode, const struct nbd_stream_stats *stats,
                               const char *digest_hex);
/* --stats=json: the summary's counts, as members of the final object
 * (nothing without --stats); called whatever the verbosity. */
void nbd_stream_record_summary (const struct nbd_stream_stats *stats, const char *digest_hex);
/* Sample the in-flight bytes for the summary's average and maximum. */
void nbd_stream_sample_in_flight (struct nbd_stream_stats *stats, uint64_t bytes);

#endif
