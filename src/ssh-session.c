/* ferry: an ssh session: connect, verify the host key, authenticate, then
 * drive libssh from the main loop for every channel the session carries. */
#include <config.h>

#include "ssh-session.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>

#include <libssh/callbacks.h>
#include <libssh/server.h>      /* ssh_send_keepalive, for clients too */

#include "error.h"
#include "gsource-release.h"
#include "message.h"

/* Keepalives that may go unanswered before the peer counts as dead, as
 * OpenSSH's ServerAliveCountMax. */
#define KEEPALIVE_MAX_MISSED 3
/* Without --connect-timeout: how long the final flush may take. */
#define FINAL_FLUSH_MS 60000
/* A blocking wait re-polls libssh at least this often. */
#define WAIT_SLICE_MS 200

struct conn_source {
  GSource source;
  struct ssh_conn *conn;
  gpointer tag;               /* from g_source_add_unix_fd; NULL once dead */
};

struct ssh_conn {
  int refs;
  ssh_session session;
  ssh_event event;            /* holds the session's poll handle, so that
                                 ssh_event_dopoll processes its input */
  char *name;                 /* "USER@HOST:PORT" */
  int timeout_ms;             /* the connect timeout; -1 for none */
  bool ask_password;
  struct ssh_callbacks_struct callbacks;  /* passphrase prompts */
  struct ssh_counter_struct counter;      /* bytes read from the socket */
  GPtrArray *clients;         /* struct ssh_conn_client *, not owned */
  struct conn_source *source; /* watches ssh_get_fd(); NULL once released */
  GIOCondition events;        /* what the source polls for */
  GSource *keepalive;         /* with a keepalive interval */
  guint64 heard_bytes;        /* counter.in_bytes at the last keepalive tick */
  unsigned missed;            /* keepalive ticks in a row with nothing heard */
  bool dead;
};

static void conn_die (struct ssh_conn *c, const char *reason);

static void
release_source (struct ssh_conn *c)
{
  if (c->source)
    gsource_release (&c->source->source);
  c->source = NULL;
}

/* Prompt on the controlling terminal, never on stdio (which carries data).
 * Returns false without a terminal. */
static bool
tty_prompt (const char *prompt, char *buf, size_t len, bool echo)
{
  int fd = open ("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
  struct termios saved, quiet;
  bool restore = false;
  size_t n = 0;
  char ch;

  if (fd < 0 || len == 0)
    return fd >= 0 ? close (fd), false : false;
  if (!echo && tcgetattr (fd, &saved) == 0) {
    quiet = saved;
    quiet.c_lflag &= ~(tcflag_t) ECHO;
    restore = tcsetattr (fd, TCSAFLUSH, &quiet) == 0;
  }
  if (write (fd, prompt, strlen (prompt)) < 0)
    n = len;                  /* no terminal after all: fail below */
  while (n < len - 1 && read (fd, &ch, 1) == 1 && ch != '\n')
    buf[n++] = ch;
  buf[n < len ? n : 0] = '\0';
  if (restore) {
    tcsetattr (fd, TCSAFLUSH, &saved);
    if (write (fd, "\n", 1) < 0)
      n = len;
  }
  close (fd);
  return n < len;
}

/* libssh asks for key passphrases here: only with --ask-password. */
static int
on_auth_prompt (const char *prompt, char *buf, size_t len, int echo,
                int verify, void *data)
{
  struct ssh_conn *c = data;

  (void) verify;
  return c->ask_password && tty_prompt (prompt, buf, len, echo) ? 0 : -1;
}

static gboolean
conn_prepare (GSource *source, gint *timeout)
{
  struct ssh_conn *c = ((struct conn_source *) source)->conn;

  *timeout = -1;
  for (guint i = 0; i < c->clients->len; i++) {
    struct ssh_conn_client *cl = g_ptr_array_index (c->clients, i);
    if (cl->want_read && cl->maybe_buffered)
      return TRUE;
  }
  return FALSE;
}

static void
mark_buffered (struct ssh_conn *c, const struct ssh_conn_client *except)
{
  for (guint i = 0; i < c->clients->len; i++) {
    struct ssh_conn_client *cl = g_ptr_array_index (c->clients, i);
    if (cl != except)
      cl->maybe_buffered = true;
  }
}

static void
check_alive (struct ssh_conn *c)
{
  if (!c->dead && ((ssh_get_status (c->session) & (SSH_CLOSED | SSH_CLOSED_ERROR)) ||
                   !ssh_is_connected (c->session)))
    conn_die (c, ssh_get_error (c->session));
}

static void
update_watch (struct ssh_conn *c)
{
  struct conn_source *cs = c->source;
  GIOCondition events;

  if (c->dead || cs == NULL)
    return;
  /* Input is always wanted: keepalive answers, window adjustments and a
   * server's disconnect must be processed even while no relay reads. */
  events = G_IO_IN | (ssh_get_poll_flags (c->session) & SSH_WRITE_PENDING ? G_IO_OUT : 0);
  if (events != c->events)
    g_source_modify_unix_fd (&cs->source, cs->tag, events);
  c->events = events;
}

static gboolean
conn_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  struct conn_source *cs = (struct conn_source *) source;
  g_autoptr (FerrySshConn) c = ssh_conn_ref (cs->conn);

  (void) callback; (void) data;
  if (cs->tag && g_source_query_unix_fd (source, cs->tag)) {
    ssh_event_dopoll (c->event, 0);
    mark_buffered (c, NULL);
    check_alive (c);
  }
  /* Every client that wants something tries: a read or write that cannot
   * proceed costs one EAGAIN.  The relay never frees an endpoint from
   * inside its ready callback, so the array is stable here. */
  for (guint i = 0; i < c->clients->len; i++) {
    struct ssh_conn_client *cl = g_ptr_array_index (c->clients, i);
    if (cl->want_read || cl->want_write)
      cl->ep->ready (cl->ep->ready_data, cl->ep, cl->want_read, cl->want_write);
  }
  if (c->dead)
    release_source (c);
  else
    update_watch (c);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs conn_source_funcs = {
  .prepare = conn_prepare,
  .dispatch = conn_dispatch,
};

/* Report the failure once; every client then finds it from its next
 * operation, and the source dispatches once more to wake them. */
static void
conn_die (struct ssh_conn *c, const char *reason)
{
  c->dead = true;
  ferry_error ("ssh connection to %s failed: %s", c->name, reason);
  g_clear_pointer (&c->keepalive, gsource_release);
  if (c->source && c->source->tag) {
    g_source_remove_unix_fd (&c->source->source, c->source->tag);
    c->source->tag = NULL;
    g_source_set_ready_time (&c->source->source, 0);
  }
}

static gboolean
on_keepalive (gpointer data)
{
  struct ssh_conn *c = data;

  if (c->counter.in_bytes != c->heard_bytes)
    c->missed = 0;
  else if (++c->missed >= KEEPALIVE_MAX_MISSED) {
    conn_die (c, "the server answered none of 3 keepalives");
    return G_SOURCE_CONTINUE;   /* released by conn_die */
  }
  c->heard_bytes = c->counter.in_bytes;
  if (ssh_send_keepalive (c->session) != SSH_OK)
    check_alive (c);
  update_watch (c);
  return G_SOURCE_CONTINUE;
}

int
ssh_conn_wait (struct ssh_conn *c, int (*step) (void *data), void *data, int again)
{
  gint64 deadline = c->timeout_ms < 0 ? -1 : g_get_monotonic_time () + c->timeout_ms * G_GINT64_CONSTANT (1000);
  int rc;

  while ((rc = step (data)) == again) {
    int slice = WAIT_SLICE_MS;
    struct pollfd pfd = {
      .fd = ssh_get_fd (c->session),
      .events = POLLIN | (ssh_get_poll_flags (c->session) & SSH_WRITE_PENDING ? POLLOUT : 0),
    };
    if (deadline >= 0) {
      gint64 left_ms = (deadline - g_get_monotonic_time ()) / 1000;
      if (left_ms <= 0)
        break;
      slice = MIN (slice, (int) left_ms);
    }
    poll (&pfd, 1, slice);
  }
  mark_buffered (c, NULL);
  return rc;
}

static void
set_error (GError **error, int code, const char *fmt, ...) G_GNUC_PRINTF (3, 4);

static void
set_error (GError **error, int code, const char *fmt, ...)
{
  g_autofree char *message = NULL;
  va_list ap;

  va_start (ap, fmt);
  message = g_strdup_vprintf (fmt, ap);
  va_end (ap);
  g_set_error_literal (error, FERRY_ERROR, code, message);
}

/* Options in OpenSSH's precedence: the host first, then ~/.ssh/config and
 * /etc/ssh/ssh_config (parsed here, so libssh does not parse them again
 * after us), then what ferry's command line says, which wins. */
static bool
configure (struct ssh_conn *c, const struct address *a,
           const struct connect_options *opts, GError **error)
{
  const struct address_ssh *ssh = &a->ssh;
  ssh_session s = c->session;
  /* libssh finds ~/.ssh through getpwuid(); glib honours $HOME first. */
  g_autofree char *ssh_dir = g_build_filename (g_get_home_dir (), ".ssh", NULL);
  int strict = 1, nodelay = 1;
  long timeout = opts->timeout;

  /* libssh refuses some names (a host with a space, ...) without saying
   * why: the address is what is wrong. */
  if (ssh_options_set (s, SSH_OPTIONS_HOST, ssh->host) < 0) {
    set_error (error, FERRY_EXIT_USAGE, "invalid address '%s': libssh refuses the host "
               "name '%s' (expected a DNS name or an IP address)", a->text, ssh->host);
    return false;
  }
  if (ssh_options_set (s, SSH_OPTIONS_SSH_DIR, ssh_dir) < 0 ||
      ssh_options_parse_config (s, NULL) < 0 ||
      (ssh->port && ssh_options_set (s, SSH_OPTIONS_PORT_STR, ssh->port) < 0) ||
      (ssh->keyfile && ssh_options_set (s, SSH_OPTIONS_IDENTITY, ssh->keyfile) < 0) ||
      (ssh->known_hosts && ssh_options_set (s, SSH_OPTIONS_KNOWNHOSTS, ssh->known_hosts) < 0) ||
      /* A config file's "StrictHostKeyChecking no" would make libssh
       * accept unknown hosts: only known_hosts_verify= relaxes that. */
      ssh_options_set (s, SSH_OPTIONS_STRICTHOSTKEYCHECK, &strict) < 0 ||
      ssh_options_set (s, SSH_OPTIONS_NODELAY, &nodelay) < 0 ||
      (timeout > 0 && ssh_options_set (s, SSH_OPTIONS_TIMEOUT, &timeout) < 0)) {
    set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': %s", a->text,
               ssh_get_error (s));
    return false;
  }
  /* After the config file: the address's user wins over its User. */
  if (ssh->user && ssh_options_set (s, SSH_OPTIONS_USER, ssh->user) < 0) {
    set_error (error, FERRY_EXIT_USAGE, "invalid address '%s': libssh refuses the user "
               "name '%s'", a->text, ssh->user);
    return false;
  }

  char *user = NULL, *host = NULL;
  unsigned port = 22;
  ssh_options_get (s, SSH_OPTIONS_USER, &user);
  ssh_options_get (s, SSH_OPTIONS_HOST, &host);
  ssh_options_get_port (s, &port);
  c->name = g_strdup_printf ("%s@%s:%u", user ? user : "?", host ? host : ssh->host, port);
  ssh_string_free_char (user);
  ssh_string_free_char (host);
  return true;
}

static bool
verify_host_key (struct ssh_conn *c, const struct address *a, GError **error)
{
  ssh_session s = c->session;
  ssh_key key = NULL;
  unsigned char *hash = NULL;
  size_t hash_len = 0;
  char *fingerprint = NULL, *file = NULL, *line = NULL;
  const char *type;
  enum ssh_known_hosts_e state;
  bool ok = false, other_type;

  if (ssh_get_server_publickey (s, &key) < 0 ||
      ssh_get_publickey_hash (key, SSH_PUBLICKEY_HASH_SHA256, &hash, &hash_len) < 0) {
    set_error (error, FERRY_EXIT_SSH_HOSTKEY, "cannot get the host key of %s: %s",
               c->name, ssh_get_error (s));
    goto out;
  }
  fingerprint = ssh_get_fingerprint_hash (SSH_PUBLICKEY_HASH_SHA256, hash, hash_len);
  type = ssh_key_type_to_char (ssh_key_type (key));
  ssh_options_get (s, SSH_OPTIONS_KNOWNHOSTS, &file);

  state = ssh_session_is_known_server (s);
  switch (state) {
  case SSH_KNOWN_HOSTS_OK:
    ok = true;
    break;
  case SSH_KNOWN_HOSTS_CHANGED:
  case SSH_KNOWN_HOSTS_OTHER:
    other_type = state == SSH_KNOWN_HOSTS_OTHER;
    set_error (error, FERRY_EXIT_SSH_HOSTKEY,
               "host key of %s has CHANGED: the server offers %s %s, %s %s holds%s; "
               "someone may be intercepting the connection (if the change is "
               "expected, remove the old key from %s)",
               c->name, type, fingerprint, other_type ? "but" : "which is not the key",
               file, other_type ? " a key of another type for it" : "", file);
    break;
  case SSH_KNOWN_HOSTS_NOT_FOUND:
  case SSH_KNOWN_HOSTS_UNKNOWN:
    if (a->ssh.verify == SSH_VERIFY_IGNORE) {
      ferry_error ("warning: host key of %s is not known (%s %s); connecting "
                   "anyway (known_hosts_verify=ignore)", c->name, type, fingerprint);
      ok = true;
    } else if (a->ssh.verify == SSH_VERIFY_AUTO) {
      ok = ssh_session_update_known_hosts (s) == SSH_OK;
      if (ok)
        ferry_error ("added the host key of %s (%s %s) to %s", c->name, type,
                     fingerprint, file);
      else
        set_error (error, FERRY_EXIT_SSH_HOSTKEY, "cannot add the host key of %s to %s: %s",
                   c->name, file, ssh_get_error (s));
    } else if (ssh_session_export_known_hosts_entry (s, &line) == SSH_OK) {
      set_error (error, FERRY_EXIT_SSH_HOSTKEY,
                 "host key of %s is not known (%s %s); if that is the right key, "
                 "add this line to %s: %s", c->name, type, fingerprint, file,
                 g_strchomp (line));
    } else {
      set_error (error, FERRY_EXIT_SSH_HOSTKEY, "host key of %s is not known (%s %s)",
                 c->name, type, fingerprint);
    }
    break;
  case SSH_KNOWN_HOSTS_ERROR:
    set_error (error, FERRY_EXIT_SSH_HOSTKEY, "cannot check the host key of %s: %s",
               c->name, ssh_get_error (s));
    break;
  }

out:
  ssh_string_free_char (line);
  ssh_string_free_char (file);
  ssh_string_free_char (fingerprint);
  ssh_clean_pubkey_hash (&hash);
  ssh_key_free (key);
  return ok;
}

static int step_none (void *s) { return ssh_userauth_none (s, NULL); }
static int step_publickey (void *s) { return ssh_userauth_publickey_auto (s, NULL, NULL); }
static int step_kbdint (void *s) { return ssh_userauth_kbdint (s, NULL, NULL); }

struct password_step {
  ssh_session session;
  const char *password;
};

static int
step_password (void *data)
{
  struct password_step *p = data;

  return ssh_userauth_password (p->session, NULL, p->password);
}

/* Keyboard-interactive: every prompt goes to the terminal. */
static int
auth_kbdint (struct ssh_conn *c)
{
  ssh_session s = c->session;
  int rc;

  while ((rc = ssh_conn_wait (c, step_kbdint, s, SSH_AUTH_AGAIN)) == SSH_AUTH_INFO) {
    int n = ssh_userauth_kbdint_getnprompts (s);
    for (int i = 0; i < n; i++) {
      char echo = 0, answer[1024];
      const char *prompt = ssh_userauth_kbdint_getprompt (s, (unsigned) i, &echo);
      if (!tty_prompt (prompt, answer, sizeof answer, echo))
        return SSH_AUTH_DENIED;
      ssh_userauth_kbdint_setanswer (s, (unsigned) i, answer);
      explicit_bzero (answer, sizeof answer);
    }
  }
  return rc;
}

static int
auth_password (struct ssh_conn *c)
{
  char password[1024];
  g_autofree char *prompt = g_strdup_printf ("%s's password: ", c->name);
  struct password_step step = { c->session, password };
  int rc;

  if (!tty_prompt (prompt, password, sizeof password, false))
    return SSH_AUTH_DENIED;
  rc = ssh_conn_wait (c, step_password, &step, SSH_AUTH_AGAIN);
  explicit_bzero (password, sizeof password);
  return rc;
}

static char *
describe_methods (int methods)
{
  static const struct { int bit; const char *name; } names[] = {
    { SSH_AUTH_METHOD_PUBLICKEY, "publickey" },
    { SSH_AUTH_METHOD_PASSWORD, "password" },
    { SSH_AUTH_METHOD_INTERACTIVE, "keyboard-interactive" },
    { SSH_AUTH_METHOD_HOSTBASED, "hostbased" },
    { SSH_AUTH_METHOD_GSSAPI_MIC, "gssapi-with-mic" },
  };
  GString *s = g_string_new (NULL);

  for (size_t i = 0; i < G_N_ELEMENTS (names); i++)
    if (methods & names[i].bit)
      g_string_append_printf (s, "%s%s", s->len ? ", " : "", names[i].name);
  if (s->len == 0)
    g_string_append (s, "none");
  return g_string_free (s, FALSE);
}

/* The agent, then identity files (keyfile= first, then ~/.ssh/id_*); then,
 * only when asked for and with a terminal, password and keyboard-interactive. */
static bool
authenticate (struct ssh_conn *c, const struct address *a, GError **error)
{
  ssh_session s = c->session;
  int rc = ssh_conn_wait (c, step_none, s, SSH_AUTH_AGAIN);
  int methods;

  if (rc == SSH_AUTH_SUCCESS)
    return true;
  methods = ssh_userauth_list (s, NULL);
  if (rc != SSH_AUTH_ERROR && (methods & SSH_AUTH_METHOD_PUBLICKEY))
    rc = ssh_conn_wait (c, step_publickey, s, SSH_AUTH_AGAIN);
  if (rc != SSH_AUTH_SUCCESS && rc != SSH_AUTH_ERROR && rc != SSH_AUTH_AGAIN &&
      c->ask_password) {
    if (methods & SSH_AUTH_METHOD_INTERACTIVE)
      rc = auth_kbdint (c);
    if (rc != SSH_AUTH_SUCCESS && rc != SSH_AUTH_ERROR && (methods & SSH_AUTH_METHOD_PASSWORD))
      rc = auth_password (c);
  }
  if (rc == SSH_AUTH_SUCCESS)
    return true;
  if (rc == SSH_AUTH_ERROR || rc == SSH_AUTH_AGAIN) {
    set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': authentication %s: %s",
               a->text, rc == SSH_AUTH_AGAIN ? "timed out" : "failed",
               rc == SSH_AUTH_AGAIN ? "no answer from the server" : ssh_get_error (s));
    return false;
  }
  g_autofree char *accepted = describe_methods (ssh_userauth_list (s, NULL));
  set_error (error, FERRY_EXIT_SSH_AUTH,
             "ssh authentication to %s failed: the server accepts %s; ferry tried "
             "%s%s", c->name, accepted,
             a->ssh.keyfile ? "the ssh agent and keyfile=, then ~/.ssh/id_*"
                            : "the ssh agent and ~/.ssh/id_*",
             c->ask_password ? ", then password and keyboard-interactive on the terminal"
                             : " (password and keyboard-interactive only with --ask-password)");
  return false;
}

struct ssh_conn *
ssh_conn_new (const struct address *a, const struct connect_options *opts,
              GError **error)
{
  g_autoptr (FerrySshConn) c = g_new0 (struct ssh_conn, 1);

  c->refs = 1;
  c->clients = g_ptr_array_new ();
  c->timeout_ms = connect_timeout_ms (opts);
  c->ask_password = opts->ask_password;
  c->session = ssh_new ();
  if (c->session == NULL) {
    set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': cannot create an ssh session",
               a->text);
    return NULL;
  }
  c->callbacks.userdata = c;
  c->callbacks.auth_function = on_auth_prompt;
  ssh_callbacks_init (&c->callbacks);
  ssh_set_callbacks (c->session, &c->callbacks);
  ssh_set_counters (c->session, &c->counter, NULL);

  if (!configure (c, a, opts, error))
    return NULL;
  if (ssh_connect (c->session) != SSH_OK) {
    set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': %s", a->text,
               ssh_get_error (c->session));
    return NULL;
  }
  if (!verify_host_key (c, a, error))
    return NULL;
  ssh_set_blocking (c->session, 0);
  if (!authenticate (c, a, error))
    return NULL;

  c->event = ssh_event_new ();
  if (c->event == NULL || ssh_event_add_session (c->event, c->session) != SSH_OK) {
    set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': cannot watch the ssh session",
               a->text);
    return NULL;
  }
  c->source = (struct conn_source *) g_source_new (&conn_source_funcs, sizeof *c->source);
  c->source->conn = c;
  c->events = G_IO_IN;
  c->source->tag = g_source_add_unix_fd (&c->source->source, ssh_get_fd (c->session), c->events);
  gsource_attach (&c->source->source);
  if (opts->keepalive > 0) {
    c->keepalive = g_timeout_source_new_seconds (opts->keepalive);
    g_source_set_callback (c->keepalive, on_keepalive, c, NULL);
    gsource_attach (c->keepalive);
  }
  return g_steal_pointer (&c);
}

struct ssh_conn *
ssh_conn_ref (struct ssh_conn *c)
{
  c->refs++;
  return c;
}

void
ssh_conn_unref (struct ssh_conn *c)
{
  if (c == NULL || --c->refs > 0)
    return;
  g_clear_pointer (&c->keepalive, gsource_release);
  release_source (c);
  if (c->event) {
    ssh_event_remove_session (c->event, c->session);
    ssh_event_free (c->event);
  }
  if (c->session && c->name && !c->dead && ssh_is_connected (c->session)) {
    /* Bytes the relay counted as delivered may still sit in libssh. */
    ssh_set_blocking (c->session, 1);
    if (ssh_blocking_flush (c->session, c->timeout_ms > 0 ? c->timeout_ms : FINAL_FLUSH_MS) != SSH_OK)
      ferry_error ("ssh connection to %s: cannot send the last bytes: %s", c->name,
                   ssh_get_error (c->session));
    ssh_disconnect (c->session);
  }
  if (c->session)
    ssh_free (c->session);
  g_ptr_array_unref (c->clients);
  g_free (c->name);
  g_free (c);
}

ssh_session
ssh_conn_session (struct ssh_conn *c)
{
  return c->session;
}

const char *
ssh_conn_name (struct ssh_conn *c)
{
  return c->name;
}

bool
ssh_conn_is_dead (struct ssh_conn *c)
{
  return c->dead;
}

guint64
ssh_conn_bytes_in (struct ssh_conn *c)
{
  return c->counter.in_bytes;
}

void
ssh_conn_attach (struct ssh_conn *c, struct ssh_conn_client *client)
{
  g_ptr_array_add (c->clients, client);
}

void
ssh_conn_detach (struct ssh_conn *c, struct ssh_conn_client *client)
{
  g_ptr_array_remove (c->clients, client);
}

void
ssh_conn_update (struct ssh_conn *c, struct ssh_conn_client *client)
{
  if (client)
    mark_buffered (c, client);
  check_alive (c);
  update_watch (c);
}
