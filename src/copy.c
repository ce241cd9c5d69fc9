/* ferry: `ferry copy` and `ferry digest` (copy.h).
 *
 * A copy with a remote side is the remote stream mode (nbd-remote.c).  A
 * local copy is two children, the stream mode's sender and receiver, with
 * a pipe between them, and this process between them and the user: it
 * holds the pipe's read end too, so that the sender never sees it close
 * (and says nothing of it) when the receiver fails; it takes the halves'
 * deferred lines (deferred-line.h), so that one line says what went wrong;
 * and it passes a stop signal on to the receiver, which ends the writes in
 * flight, flushes and says how far DST is complete. */
#include <config.h>

#include "copy.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "address.h"
#include "deferred-line.h"
#include "endpoint-fd.h"
#include "endpoint-ssh.h"
#include "error.h"
#include "image-format.h"
#include "message.h"
#include "nbd-remote.h"
#include "range-messages.h"
#include "relay.h"
#include "remote-exit-codes.h"
#include "signal-watch.h"
#include "stats.h"

/* A digest's hex (SHA-256) and its NUL. */
#define DIGEST_HEX_SIZE 65

/* One SRC, DST or IMAGE as typed. */
struct image_arg {
  const char *text;           /* as the user typed it, for messages */
  char *address;              /* a remote image's ssh://[USER@]HOST[:PORT][?PARAMS];
                                 NULL: a local path, an NBD URI or '[' */
  char *path;                 /* the path on that host, or @text */
};

static void
image_arg_clear (struct image_arg *a)
{
  g_free (a->address);
  g_free (a->path);
}

const char *
image_command_take (int *argc, char **argv)
{
  static const char *const commands[] = { "copy", "digest" };

  if (*argc < 2)
    return NULL;
  for (size_t i = 0; i < G_N_ELEMENTS (commands); i++)
    if (strcmp (argv[1], commands[i]) == 0) {
      memmove (&argv[1], &argv[2], (*argc - 1) * sizeof *argv);
      (*argc)--;
      return commands[i];
    }
  return NULL;
}

/* scp's rule: [USER@]HOST:PATH is remote when a ':' comes before any '/'
 * (and [USER@][V6]:PATH); ./a:b is a local path. */
static bool
split_scp_form (const char *text, struct image_arg *a)
{
  const char *slash = strchr (text, '/');
  const char *at = strchr (text, '@');
  const char *host = at && (slash == NULL || at < slash) ? at + 1 : text;
  const char *colon = host[0] == '[' ? strstr (host, "]:") : strchr (host, ':');

  if (host[0] == '[' && colon)
    colon++;
  /* USER@:PATH is remote too, and refused as an address. */
  if (colon == NULL || colon == text || (slash && slash < colon))
    return false;
  a->address = g_strdup_printf ("ssh://%.*s", (int) (colon - text), text);
  /* The remote ferry starts in the login's home: an empty PATH is that
   * directory, and ~/PATH (which scp's remote shell expands) is PATH. */
  const char *path = colon + 1;
  if (strcmp (path, "~") == 0)
    path = ".";
  else if (g_str_has_prefix (path, "~/"))
    path += 2;
  a->path = g_strdup (path[0] ? path : ".");
  return true;
}

static bool
parse_image_arg (const char *text, struct image_arg *a, GError **error)
{
  a->text = text;
  if (g_str_has_prefix (text, "ssh://")) {
    const char *slash = strchr (text + strlen ("ssh://"), '/');
    const char *query = slash ? strchr (slash, '?') : NULL;

    if (slash == NULL || slash[1] == '\0' || slash[1] == '?')
      return ferry_set_error (error, FERRY_EXIT_USAGE, "'%s': expected "
                              "ssh://[USER@]HOST[:PORT]/PATH", text);
    g_autofree char *escaped = query ? g_strndup (slash, query - slash) : g_strdup (slash);
    /* A URL's path: %XX is a byte (%20 a space, %3F a '?', %25 a '%'). */
    if ((a->path = g_uri_unescape_string (escaped, NULL)) == NULL)
      return ferry_set_error (error, FERRY_EXIT_USAGE, "'%s': its path has a bad %%-escape "
                              "(%%XX is a byte, and not %%00)", text);
    a->address = g_strdup_printf ("ssh://%.*s%s", (int) (slash - text - strlen ("ssh://")),
                                  text + strlen ("ssh://"), query ? query : "");
    return true;
  }
  if (strcmp (text, "[") != 0 && strstr (text, "://") == NULL && split_scp_form (text, a))
    return true;
  a->path = g_strdup (text);
  return true;
}

/* A local DST that is a directory means DST/basename(SRC), as cp's. */
static char *
local_destination (const struct image_arg *src, const struct image_arg *dst)
{
  g_autofree char *base = g_path_get_basename (src->path);

  if (image_is_path (dst->path) && image_is_path (src->path) &&
      g_file_test (dst->path, G_FILE_TEST_IS_DIR))
    return g_build_filename (dst->path, base, NULL);
  return g_strdup (dst->path);
}

/* SRC's format, named or found from its header: NULL if it cannot be
 * read (its sender says why). */
static const char *
source_format (const struct nbd_stream_options *o, const char *src)
{
  if (o->src_format && strcmp (o->src_format, "auto") != 0)
    return o->src_format;
  return image_format_probe (src, src, NULL);
}

/* DST may be neither SRC nor, for a SRC in a qemu format, one of its
 * backing files: the copy would change what it reads. */
static bool
check_not_same_file (const struct nbd_stream_options *o, const char *src, const char *dst,
                     GError **error)
{
  const char *format;
  struct stat a, b;

  if (stat (dst, &b) != 0)
    return true;
  if (stat (src, &a) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino)
    return ferry_set_error (error, FERRY_EXIT_USAGE, "%s and %s are the same file", src, dst);
  format = source_format (o, src);
  if (format && strcmp (format, "raw") != 0 && image_chain_holds (src, format, &b))
    return ferry_set_error (error, FERRY_EXIT_USAGE, "%s is a backing file of %s: the copy "
                            "would change its own source", dst, src);
  return true;
}

/* A DST in one of qemu's formats that does not exist yet is created at
 * SRC's size, as qemu-img convert does, by the receiver (--create-size).
 * A SRC whose size cannot be told here (an NBD URI, a remote one, a format
 * other than raw and qcow2) leaves it to the size in the stream's header
 * (nbd-stream.c, size_from_stream_header). */
static void
set_create_size (struct nbd_stream_options *o, const char *src)
{
  const char *format;

  if (o->dst_format == NULL || strcmp (o->dst_format, "raw") == 0 || !image_is_path (src))
    return;
  if ((format = source_format (o, src)) == NULL)
    return;
  image_virtual_size (src, format, &o->create_size, NULL);
}

/* --- Children that a stop signal is passed on to. --- */

/* The child that a stop signal goes to: a digest's, or a local copy's
 * sender until it has opened SRC, then its receiver, which says how far
 * DST is complete. */
static volatile sig_atomic_t stop_target;
/* Whether stop_target is in this process's group, where a terminal's ^C
 * or ^\ (the kernel's, to the whole foreground group) reached it already;
 * a hangup's SIGHUP goes to the session leader alone. */
static volatile sig_atomic_t stop_target_in_group;
/* The last stop signal that came, passed on or not: a child may have
 * ended just before it (a zombie gets nothing), or none was running. */
static volatile sig_atomic_t stop_came;
static const int stops[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };

static void
pass_on_signal (int signum, siginfo_t *info, void *context)
{
  bool from_keyboard = info->si_code == SI_KERNEL && (signum == SIGINT || signum == SIGQUIT);

  (void) context;
  stop_came = signum;
  if (stop_target > 0 && !(from_keyboard && stop_target_in_group))
    kill (stop_target, signum);
}

/* While children run, the stop signals go on to stop_target, except one
 * that was ignored when ferry started (nohup), which stays ignored; not
 * one that a finished copy's signal_watch_free ignores now (the
 * --check-source digest after it). */
static void
pass_stops_begin (struct sigaction old[G_N_ELEMENTS (stops)])
{
  struct sigaction pass = { .sa_sigaction = pass_on_signal, .sa_flags = SA_SIGINFO };

  sigemptyset (&pass.sa_mask);
  for (size_t i = 0; i < G_N_ELEMENTS (stops); i++)
    sigaction (stops[i], signal_watch_ignored_at_start (stops[i]) ? NULL : &pass, &old[i]);
}

static void
pass_stops_end (const struct sigaction old[G_N_ELEMENTS (stops)])
{
  stop_target = 0;
  for (size_t i = 0; i < G_N_ELEMENTS (stops); i++)
    sigaction (stops[i], &old[i], NULL);
}

/* fork(), the child becoming stop_target, in a process group of its own
 * if @own_group (set by both, whichever runs first).  The signals are
 * blocked across it, and stay blocked in the child: one that comes before
 * the child's own handlers are in place waits for them (the stream mode's
 * signal_watch_new unblocks it) instead of reaching pass_on_signal,
 * inherited from here with a stop_target that is not its own. */
static pid_t
fork_stop_target (bool own_group)
{
  sigset_t mask;
  pid_t pid;

  signal_watch_block (&mask);
  pid = fork ();
  if (own_group && pid >= 0)
    setpgid (pid == 0 ? 0 : pid, 0);
  if (pid > 0) {
    stop_target_in_group = !own_group;
    stop_target = pid;
  }
  if (pid != 0)
    pthread_sigmask (SIG_SETMASK, &mask, NULL);
  return pid;
}

/* --- A local copy: two children and a pipe. --- */

/* Fork one half: the stream mode with @stream_fd as its stdin (the
 * receiver) or stdout (the sender), and @report as its deferred lines'
 * socket.  Its own process group: a terminal's ^C reaches it through us. */
static pid_t
fork_half (const struct nbd_stream_options *half, int stream_fd, int report, int *close_fds,
           int stats[2])
{
  pid_t pid = fork_stop_target (true);
  int rc;

  if (pid != 0) {
    if (stats[1] >= 0)
      close (stats[1]);
    stats[1] = -1;
    return pid;
  }
  for (int *fd = close_fds; *fd >= 0; fd++)
    close (*fd);
  /* --stats=json: this half's object goes to the parent, which writes
   * the one object of the copy. */
  ferry_stats_to_fd (stats[1]);
  struct nbd_stream_options o = *half;
  o.report_fd = report;
  if (dup2 (stream_fd, o.receive ? STDIN_FILENO : STDOUT_FILENO) < 0)
    _exit (FERRY_EXIT_FAILURE);
  close (stream_fd);
  rc = nbd_stream_main (&o);
  ferry_stats_finish (rc);
  _exit (rc);
}

/* --stats=json: a pipe for a half's object, or none. */
static void
stats_pipe (int fds[2])
{
  fds[0] = fds[1] = -1;
  if (ferry_stats_enabled () && pipe2 (fds, O_CLOEXEC) < 0)
    fds[0] = fds[1] = -1;
}

/* The half's object as member @name of the copy's, and its pipe closed. */
static void
take_half_stats (int fds[2], const char *name)
{
  StatsValue *half = ferry_stats_read_fd (fds[0]);

  if (fds[0] >= 0)
    close (fds[0]);
  if (fds[1] >= 0)
    close (fds[1]);
  if (half)
    ferry_stats_set (name, half);
}

/* @pid's exit code, or 128 + the signal that killed it (also in
 * *@killed_by, if given; 0 otherwise). */
static int
wait_code (pid_t pid, int *killed_by)
{
  int status;

  if (killed_by)
    *killed_by = 0;
  while (waitpid (pid, &status, 0) < 0)
    if (errno != EINTR) {
      ferry_error ("cannot wait for process %d: %s", (int) pid, g_strerror (errno));
      return FERRY_EXIT_FAILURE;
    }
  if (WIFEXITED (status))
    return WEXITSTATUS (status);
  if (killed_by)
    *killed_by = WTERMSIG (status);
  return 128 + WTERMSIG (status);
}

/* Wait until @fd has bytes to read; false at its end without any. */
static bool
wait_readable (int fd)
{
  struct pollfd p = { .fd = fd, .events = POLLIN };

  while (poll (&p, 1, -1) < 0)
    if (errno != EINTR)
      return false;
  return (p.revents & POLLIN) != 0;
}

/* The deferred line on @fd, printed; false if there was none. */
static bool
print_deferred (int fd)
{
  g_autofree char *reason = NULL, *where = NULL;

  if (!deferred_line_take (fd, &reason, &where))
    return false;
  ferry_error ("%s%s%s", reason, where ? "; " : "", where ? where : "");
  return true;
}

static int
run_local_copy (const struct nbd_stream_options *o)
{
  struct nbd_stream_options sender = *o, receiver = *o;
  int pipe_fds[2], send_report[2], receive_report[2];
  struct sigaction old[G_N_ELEMENTS (stops)];
  pid_t send_pid, receive_pid;
  int send_code = FERRY_EXIT_OK, receive_code;
  int send_stats[2], receive_stats[2] = { -1, -1 };

  sender.receive = NULL;
  receiver.send = NULL;
  /* '[ CMD ]' serves its own side only, never the other's image. */
  if (strcmp (sender.send, "[") != 0)
    sender.command = NULL;
  if (strcmp (receiver.receive, "[") != 0)
    receiver.command = NULL;
  /* One progress line: the receiver knows the size from the header. */
  sender.progress.mode = PROGRESS_NEVER;
  if (pipe2 (pipe_fds, O_CLOEXEC) < 0 ||
      socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, send_report) < 0 ||
      socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, receive_report) < 0) {
    ferry_error ("cannot set up the copy: %s", g_strerror (errno));
    return FERRY_EXIT_FAILURE;
  }
  pass_stops_begin (old);
  stats_pipe (send_stats);
  send_pid = fork_half (&sender, pipe_fds[1], send_report[1],
                        (int[]) { pipe_fds[0], send_report[0], receive_report[0],
                                  receive_report[1], send_stats[0], -1 }, send_stats);
  close (pipe_fds[1]);
  close (send_report[1]);
  /* The receiver starts once the stream's header is there: SRC opened.  A
   * SRC that cannot be opened is the one line, with nothing written. */
  if (!wait_readable (pipe_fds[0])) {
    send_code = wait_code (send_pid, NULL);
    if (!print_deferred (send_report[0]) && send_code == FERRY_EXIT_OK)
      send_code = FERRY_EXIT_STREAM;
    receive_pid = -1;
  } else {
    stats_pipe (receive_stats);
    receive_pid = fork_half (&receiver, pipe_fds[0], receive_report[1],
                             (int[]) { send_report[0], receive_report[0], receive_stats[0],
                                       send_stats[0], -1 },
                             receive_stats);
  }
  close (receive_report[1]);
  if (receive_pid > 0) {
    receive_code = wait_code (receive_pid, NULL);
    stop_target = 0;
    /* The receiver has ended: what the sender still writes goes nowhere. */
    if (receive_code != FERRY_EXIT_OK)
      kill (send_pid, SIGKILL);
    send_code = wait_code (send_pid, NULL);
    if (receive_code != FERRY_EXIT_OK && send_code != FERRY_EXIT_OK &&
        send_code != 128 + SIGKILL)
      /* The sender said why it stopped; the receiver's cut line would
       * only repeat it. */
      receive_code = send_code;
    else
      print_deferred (receive_report[0]);
  } else {
    receive_code = send_code;
  }
  close (pipe_fds[0]);
  pass_stops_end (old);
  close (send_report[0]);
  close (receive_report[0]);
  take_half_stats (send_stats, "send");
  take_half_stats (receive_stats, "receive");
  return receive_code;
}

/* --- The commands. --- */

/* DST is written through qemu-nbd, which takes a write lock: one writer. */
static bool
dst_has_one_writer (const struct nbd_stream_options *o)
{
  return o->dst_format && strcmp (o->dst_format, "raw") != 0;
}

/* With --streams of 2 or more, or --delta, the remote copy's ranged
 * streams and controller, its "remote" receivers run here (o->same_host). */
static bool
setup_local_copy (struct nbd_stream_options *o, const struct image_arg *src,
                  const struct image_arg *dst, char **dst_path, GError **error)
{
  *dst_path = local_destination (src, dst);
  if (image_is_path (src->path) && image_is_path (*dst_path) &&
      !check_not_same_file (o, src->path, *dst_path, error))
    return false;
  set_create_size (o, src->path);
  o->send = src->path;
  /* qemu-nbd takes a write lock: one writer per image (and --delta is
   * then refused, as for a remote copy). */
  if (dst_has_one_writer (o))
    o->streams = 1;
  /* Here the streams share the cores, not a link's windows: one a core
   * (a 1 GiB --delta on 2 cores: 0.9-1.0 s with 2, 1.15 s with 4). */
  if (o->delta && o->streams == 0)
    o->streams = CLAMP (g_get_num_processors (), 2, NBD_DEFAULT_STREAMS);
  o->same_host = o->streams > 1 || o->delta;
  if (o->same_host && strcmp (dst->path, "[") == 0)
    return ferry_set_error (error, FERRY_EXIT_USAGE, "with --streams or --delta, DST is a path "
                            "or an NBD URI, not '[ CMD ARGS... ]'");
  if (o->same_host)
    o->remote_receive = *dst_path;
  else
    o->receive = *dst_path;
  return true;
}

/* @source_name: SRC's basename, for a DST that is a directory;
 * @remote_name: the remote image as typed (joined as @remote_path is). */
static void
setup_remote_copy (struct ferry_options *options, const struct image_arg *src,
                   const struct image_arg *dst, char **remote_path, char **source_name,
                   char **remote_name)
{
  struct nbd_stream_options *o = &options->stream;
  bool upload = dst->address != NULL;

  options->address = upload ? dst->address : src->address;
  *source_name = image_is_path (src->path) ? g_path_get_basename (src->path) : NULL;
  o->source_name = *source_name;
  if (upload) {
    o->send = src->path;
    /* scp's DIR/: the name comes with it; an existing directory
     * without the slash is the remote half's to find (--source-name). */
    bool into_directory = g_str_has_suffix (dst->path, "/") && *source_name;
    *remote_path = into_directory ? g_strconcat (dst->path, *source_name, NULL)
                                  : g_strdup (dst->path);
    *remote_name = into_directory ? g_strconcat (dst->text, *source_name, NULL)
                                  : g_strdup (dst->text);
    o->remote_receive = *remote_path;
    set_create_size (o, src->path);
  } else {
    o->remote_send = src->path;
    o->receive = dst->path;
    *remote_name = g_strdup (src->text);
  }
  /* scp's HOST:PATH; an ssh:// URL's lines name the path (its text holds
   * the login's parameters). */
  if (strstr (*remote_name, "://") == NULL)
    o->remote_image_name = *remote_name;
  /* qemu-nbd takes a write lock: one writer per image.  More streams are
   * checked by their digests: --no-verify, unless told, means one. */
  if (dst_has_one_writer (o) ||
      (o->no_verify && o->streams == 0))
    o->streams = 1;
}

/* --- ferry digest --- */

/* A remote digest, as its relay and the stops see it. */
struct remote_digest_run {
  int code;                   /* the relay's exit code; -1 until it ends */
  int stop_signum;            /* the stop signal that came; 0 before */
};

static void
on_digest_relay_done (struct relay *relay, int exit_code, void *data)
{
  struct remote_digest_run *r = data;

  (void) relay;
  r->code = exit_code;
}

/* A stop ends the wait: the session closes, and the far ferry, whose
 * stdout's reader has gone with it, reads its image no further (the
 * "signal" request would not do: sshd refuses it for root's sessions).
 * While connecting, the connection gives up (signal_watch_stop_pending). */
static void
on_digest_stop (int signum, void *data)
{
  struct remote_digest_run *r = data;

  if (signum != SIGUSR1 && r->stop_signum == 0)
    r->stop_signum = signum;
}

/* Relay the far ferry's line until it ends, or a stop.  The code is the
 * relay's failure, else the far ferry's (its lines said why), as a remote
 * copy's: 30 for an image it could not open, 24 for one that did not run
 * or did not end by itself. */
static int
relay_remote_digest (const struct ferry_options *options, const struct image_arg *image,
                     const char *host, struct endpoint *channel, struct remote_digest_run *r)
{
  struct relay *relay = relay_new (endpoint_stdio_new (false, options->relay.buffer_size),
                                   channel, &options->relay, on_digest_relay_done, r);
  int status;
  const char *signal;

  while (r->code < 0 && r->stop_signum == 0)
    g_main_context_iteration (NULL, TRUE);
  status = endpoint_ssh_exit_status (channel);
  signal = endpoint_ssh_exit_signal (channel);
  if (r->code == 0 && status != 0) {
    r->code = remote_exit_code (status, signal, 0, false);
    if (signal)
      ferry_error ("%s: the remote ferry was killed by SIG%s (the digest of %s)", host, signal,
                   image->text);
    else if (status < 0)
      ferry_error ("%s: the remote ferry ended without an exit status (the digest of %s)",
                   host, image->text);
  }
  relay_free (relay);
  if (r->code >= 0)
    return r->code;
  ferry_error ("stopped by %s: the digest of %s was not finished",
               signal_watch_name (r->stop_signum), image->text);
  return 128 + r->stop_signum;
}

/* The remote ferry computes it: `ferry --nbd-digest=PATH` on HOST, with
 * its line (and messages) naming the image as typed. */
static int
remote_digest (const struct ferry_options *options, const struct image_arg *image)
{
  g_autoptr (GError) error = NULL;
  g_autoptr (GString) command = g_string_new (NULL);
  g_autoptr (FerryAddress) address = address_parse_flags (image->address, ADDRESS_SSH_SESSION,
                                                          &error);
  g_autofree char *digest = g_strdup_printf ("--nbd-digest=%s", image->path);
  g_autofree char *name = g_strdup_printf ("--image-name=%s", image->text);
  g_autofree char *format = options->stream.src_format
    ? g_strdup_printf ("--src-format=%s", options->stream.src_format) : NULL;
  g_autofree char *source = options->stream.source_name
    ? g_strdup_printf ("--source-name=%s", options->stream.source_name) : NULL;
  const char *const args[] = {
    options->connect.remote_helper ? options->connect.remote_helper : "ferry",
    digest, name, format, source,   /* the last two may be NULL: skipped */
  };
  struct remote_digest_run r = { .code = -1 };
  struct signal_watch *signals = signal_watch_new (on_digest_stop, &r);
  struct ferry_ssh_conn *conn = NULL;
  struct endpoint *channel = NULL;
  int code = -1;

  for (size_t i = 0; i < G_N_ELEMENTS (args); i++) {
    if (args[i] == NULL)
      continue;
    g_autofree char *quoted = g_shell_quote (args[i]);
    g_string_append_printf (command, "%s%s", i ? " " : "", quoted);
  }
  if (address && (conn = ferry_ssh_conn_new (address, &options->connect, &error)) &&
      (channel = endpoint_ssh_exec_on (conn, NULL, command->str, NULL, &error)))
    code = relay_remote_digest (options, image, ferry_ssh_conn_name (conn), channel, &r);
  if (conn)
    ferry_ssh_conn_unref (conn);
  signal_watch_free (signals);
  if (error) {
    ferry_error ("%s", error->message);
    return error->code;
  }
  return code;
}

/* One IMAGE, in a child of its own (the stream mode runs once a process),
 * whose stdin is /dev/null: a remote digest's channel reads nothing of
 * the user's.  Its caller passes the stops on (pass_stops_begin; a
 * terminal's ^C reaches the child in ferry's group by itself): the child
 * ends too, and says how, rather than print its digest after this process
 * has gone (a remote digest closes its session, which ends the far
 * ferry's reading).  A stop that found no child running (one had just
 * ended) ends the digests here, with its line, before the next image; one
 * as the last image's child ended comes too late to stop anything. */
static int
digest_one (struct ferry_options *options, const struct image_arg *image)
{
  pid_t pid;
  int null, code, killed_by;

  if (stop_came) {
    ferry_error ("stopped by %s", signal_watch_name (stop_came));
    return 128 + stop_came;
  }
  /* In ferry's group: a remote digest's login may ask on the terminal. */
  pid = fork_stop_target (false);
  if (pid < 0) {
    ferry_error ("cannot fork: %s", g_strerror (errno));
    return FERRY_EXIT_FAILURE;
  }
  if (pid > 0) {
    code = wait_code (pid, &killed_by);
    stop_target = 0;
    /* Killed (SIGKILL): the child said nothing itself. */
    if (killed_by)
      ferry_error ("%s: stopped by %s", image->text, signal_watch_name (killed_by));
    return code;
  }
  null = open ("/dev/null", O_RDONLY);
  if (null < 0 || dup2 (null, STDIN_FILENO) < 0)
    _exit (FERRY_EXIT_FAILURE);
  close (null);
  if (image->address)
    _exit (remote_digest (options, image));
  options->stream.digest = image->path;
  if (image_is_path (image->path))
    options->stream.image_name = image->text;
  _exit (nbd_stream_main (&options->stream));
}

int
digest_main (struct ferry_options *options, char **args, int n_args)
{
  struct sigaction old[G_N_ELEMENTS (stops)];
  int first_failure = FERRY_EXIT_OK;

  ferry_stats_set_string ("type", "digest");
  if (n_args < 1) {
    ferry_error ("ferry digest takes one IMAGE or more; see 'ferry digest --help'");
    return FERRY_EXIT_USAGE;
  }
  pass_stops_begin (old);
  for (int i = 0; i < n_args; i++) {
    struct image_arg image = { 0 };
    g_autoptr (GError) error = NULL;
    int code;

    if (!parse_image_arg (args[i], &image, &error)) {
      ferry_error ("%s", error->message);
      code = error->code;
    } else {
      code = digest_one (options, &image);
    }
    if (first_failure == FERRY_EXIT_OK)
      first_failure = code;
    bool remote = image.address != NULL;
    image_arg_clear (&image);
    /* Stopped, or stdout is gone (a local image's only FERRY_EXIT_IO):
     * the other images would say so again. */
    if ((code == FERRY_EXIT_IO && !remote) || code >= 128)
      break;
  }
  pass_stops_end (old);
  return first_failure;
}

/* --- ferry copy --- */

/* --check-source: the digest of @image now, read as @format, into @hex;
 * @source_name, for an upload's DST: a far directory means the file that
 * its receiver wrote there, DIR/NAME. */
static int
digest_now (const struct ferry_options *options, const struct image_arg *image,
            const char *format, const char *source_name, char hex[DIGEST_HEX_SIZE])
{
  struct sigaction old[G_N_ELEMENTS (stops)];
  struct ferry_options o = *options;
  char line[256];
  int fds[2], saved, code;
  ssize_t n;

  o.stream.send = o.stream.receive = o.stream.remote_send = o.stream.remote_receive = NULL;
  if (strcmp (image->path, "[") != 0)
    o.stream.command = NULL;
  o.stream.src_format = format;
  o.stream.source_name = source_name;
  o.stream.progress.mode = PROGRESS_NEVER;
  o.stream.verbose = false;
  if (pipe2 (fds, O_CLOEXEC) < 0 || (saved = dup (STDOUT_FILENO)) < 0) {
    ferry_error ("cannot digest %s: %s", image->text, g_strerror (errno));
    return FERRY_EXIT_FAILURE;
  }
  /* One line, which the pipe holds until the child has exited. */
  dup2 (fds[1], STDOUT_FILENO);
  close (fds[1]);
  pass_stops_begin (old);
  code = digest_one (&o, image);
  pass_stops_end (old);
  dup2 (saved, STDOUT_FILENO);
  close (saved);
  n = read (fds[0], line, sizeof line);
  close (fds[0]);
  if (code == FERRY_EXIT_OK && n < DIGEST_HEX_SIZE - 1) {
    ferry_error ("cannot digest %s: no digest came", image->text);
    return FERRY_EXIT_FAILURE;
  }
  memcpy (hex, line, DIGEST_HEX_SIZE - 1);
  hex[DIGEST_HEX_SIZE - 1] = '\0';
  return code;
}

/* A SRC written during the copy leaves DST with a mix of old and new
 * blocks that no digest of the stream can see: SRC read again, at the end,
 * must have DST's digest (which the copy verified). */
static int
check_source (const struct ferry_options *options, const struct image_arg *src,
              const struct image_arg *dst)
{
  const char *dst_format = options->stream.dst_format ? options->stream.dst_format : "raw";
  char now[DIGEST_HEX_SIZE], copied[DIGEST_HEX_SIZE];
  int code;

  if ((code = digest_now (options, src, options->stream.src_format, NULL, now)) !=
      FERRY_EXIT_OK ||
      (code = digest_now (options, dst, dst_format, options->stream.source_name, copied)) !=
      FERRY_EXIT_OK)
    return code;
  if (strcmp (now, copied) != 0) {
    /* A '[ CMD ]' side is named after its program, as its messages are. */
    const char *src_name = strcmp (src->path, "[") == 0 ? options->stream.command[0] : src->text;
    const char *dst_name = strcmp (dst->path, "[") == 0 ? options->stream.command[0] : dst->text;
    ferry_error ("%s changed during the copy: its digest is now %s, %s's is %s (copy a "
                 "snapshot, or stop what writes to it)", src_name, now, dst_name, copied);
    return FERRY_EXIT_DIGEST;
  }
  return FERRY_EXIT_OK;
}

int
copy_main (struct ferry_options *options, char **args, int n_args)
{
  struct image_arg src = { 0 }, dst = { 0 };
  struct nbd_stream_options *o = &options->stream;
  g_autoptr (GError) error = NULL;
  g_autofree char *path = NULL, *source_name = NULL, *remote_name = NULL;
  int rc = FERRY_EXIT_OK;

  if (n_args != 2)
    ferry_set_error (&error, FERRY_EXIT_USAGE, "ferry copy takes SRC and DST; see 'ferry copy "
                     "--help'");
  else if (parse_image_arg (args[0], &src, &error) && parse_image_arg (args[1], &dst, &error)) {
    if (src.address && dst.address)
      ferry_set_error (&error, FERRY_EXIT_USAGE, "at most one of SRC and DST may be on "
                       "another host: %s, %s", src.text, dst.text);
    else if (o->delta && dst_has_one_writer (o))
      /* qemu-nbd serves one writer, and --delta's ranges take several. */
      ferry_set_error (&error, FERRY_EXIT_USAGE, "--delta writes only a raw DST, not "
                       "--dst-format=%s", o->dst_format);
    else if (src.address || dst.address)
      setup_remote_copy (options, &src, &dst, &path, &source_name, &remote_name);
    else
      setup_local_copy (o, &src, &dst, &path, &error);
  }
  ferry_stats_set_string ("type", src.address || dst.address ? "remote-copy" : "copy");
  pid_t self = getpid ();
  if (error == NULL && nbd_remote_requested (o) && nbd_stream_validate (o, &error))
    rc = nbd_remote_main (options);
  else if (error == NULL && !nbd_remote_requested (o))
    rc = run_local_copy (o);
  /* nbd_remote_main returns in each local half that it forked too (its
   * code the half's): only the copy itself checks SRC. */
  if (error == NULL && rc == FERRY_EXIT_OK && o->check_source && getpid () == self) {
    struct image_arg copied = dst;
    /* A download's DST is here: DIR/ means DIR/basename(SRC), as its
     * receiver took it. */
    g_autofree char *downloaded = path ? NULL : local_destination (&src, &dst);
    copied.path = path ? path : downloaded;
    rc = check_source (options, &src, &copied);
  }
  if (error) {
    ferry_error ("%s", error->message);
    rc = error->code;
  }
  image_arg_clear (&src);
  image_arg_clear (&dst);
  return rc;
}

