/* ferry: an ssh session: set it up (ssh-setup.c), then drive libssh from
 * the main loop for every channel the session carries: the GSource on its
 * fd, keepalives, and the reference count the channels share. */
#include <config.h>

#include "ssh-session.h"

#include <libssh/callbacks.h>
#include <libssh/server.h>      /* ssh_send_keepalive, for clients too */
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
#include <unistd.h>

#include "error.h"
#include "gsource-release.h"
#include "message.h"
#include "signal-watch.h"
#include "ssh-setup.h"
#include "tcp-connect.h"

/* Without --connect-timeout: how long the final flush may take. */
#define FINAL_FLUSH_MS 60000
/* Without --connect-timeout: how long the handshake may take, as libssh's
 * own blocking ssh_connect allows. */
#define HANDSHAKE_MS 10000

struct conn_source {
  GSource source;
  struct ferry_ssh_conn *conn;
  gpointer tag;               /* from g_source_add_unix_fd; NULL once dead */
};

struct ferry_ssh_conn {
  int refs;
  ssh_session session;
  ssh_event event;            /* holds the session's poll handle, so that
                                 ssh_event_dopoll processes its input */
  char *name;                 /* "USER@HOST:PORT" */
  int timeout_ms;             /* the connect timeout; -1 for none */
  int exchange_ms;            /* how long a blocking exchange after the
                                 handshake (login, opening channels) may wait:
                                 the connect timeout, or else as long as the
                                 keepalives would take to give up; -1: none */
  struct ferry_ssh_prompts prompts;  /* --ask-password, and whether the login asked */
  struct ssh_callbacks_struct callbacks;  /* passphrase prompts */
  struct ssh_counter_struct counter;      /* bytes read from the socket */
  GPtrArray *clients;         /* struct ferry_ssh_client *, not owned */
  struct conn_source *source; /* watches ssh_get_fd(); NULL once released */
  GIOCondition events;        /* what the source polls for */
  GSource *keepalive;         /* with a keepalive interval */
  guint64 heard_bytes;        /* counter.in_bytes at the last keepalive tick */
  unsigned missed;            /* keepalive ticks in a row with nothing heard */
  bool dead;
  char *failure;              /* why it died; NULL while alive */
  bool owner_reports_failure; /* ferry_ssh_conn_report_failure_myself */
  unsigned keepalive_seconds; /* 0: none */
  bool watched;               /* it joined the main loop: a relay may have
                                 left bytes in libssh */
};

static void conn_die (struct ferry_ssh_conn *c, const char *reason);

static void
release_source (struct ferry_ssh_conn *c)
{
  if (c->source)
    gsource_release (&c->source->source);
  c->source = NULL;
}

/* What @cl can do now, from its channel's flags alone: nothing here reads
 * the socket or polls. */
static bool
client_can_read (const struct ferry_ssh_client *cl)
{
  return cl->want_read && (cl->maybe_buffered || cl->state_changed);
}

/* A channel that nothing drives yet (a remote half run ahead of its
 * relay): what happens to it waits, noted, until its relay starts. */
static bool
undriven (const struct ferry_ssh_client *cl)
{
  return cl->ep->ready == NULL;
}

static bool
client_can_write (const struct ferry_ssh_conn *c, const struct ferry_ssh_client *cl)
{
  /* A closed channel's window never opens again: its write fails at once,
   * which ends the writer's direction (a remote command that exited
   * without reading all its input). */
  return cl->want_write && (ssh_channel_is_closed (cl->channel) ||
                            (!(ssh_get_poll_flags (c->session) & SSH_WRITE_PENDING) &&
                             ssh_channel_window_size (cl->channel) > 0));
}

static gboolean
conn_prepare (GSource *source, gint *timeout)
{
  struct ferry_ssh_conn *c = ((struct conn_source *) source)->conn;

  *timeout = -1;
  /* A dead session dispatches only when woken (ferry_ssh_conn_wake_dead). */
  if (c->dead)
    return FALSE;
  for (guint i = 0; i < c->clients->len; i++) {
    struct ferry_ssh_client *cl = g_ptr_array_index (c->clients, i);
    if (undriven (cl))
      continue;
    if (client_can_read (cl) || cl->state_changed ||
        (cl->write_blocked && client_can_write (c, cl)))
      return TRUE;
  }
  return FALSE;
}

static void
check_alive (struct ferry_ssh_conn *c)
{
  if (!c->dead && ((ssh_get_status (c->session) & (SSH_CLOSED | SSH_CLOSED_ERROR)) ||
                   !ssh_is_connected (c->session)))
    conn_die (c, ssh_get_error (c->session));
}

static void
update_watch (struct ferry_ssh_conn *c)
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
  g_autoptr (FerrySshConn) c = ferry_ssh_conn_ref (cs->conn);
  bool dead_before_clients;

  (void) callback; (void) data;
  if (cs->tag && g_source_query_unix_fd (source, cs->tag)) {
    ssh_event_dopoll (c->event, 0);
    check_alive (c);
  }
  dead_before_clients = c->dead;
  /* Only the clients that can make progress try; the others hear of their
   * channel's EOF or close (which ends a relay that waits for nothing), or
   * of the session's death.  The relay never frees an endpoint from inside
   * its ready callback, so the array is stable here. */
  for (guint i = 0; i < c->clients->len; i++) {
    struct ferry_ssh_client *cl = g_ptr_array_index (c->clients, i);
    if (undriven (cl))
      continue;
    bool readable = client_can_read (cl) || (c->dead && cl->want_read);
    bool writable = client_can_write (c, cl) || (c->dead && cl->want_write);
    if (readable || writable || cl->state_changed || c->dead) {
      cl->state_changed = false;
      if (writable)
        cl->write_blocked = false;
      cl->ep->ready (cl->ep->ready_data, cl->ep, readable, writable);
    }
  }
  /* A dead session's source stays until the last reference goes, idle:
   * ferry_ssh_conn_wake_dead wakes it for a client that wants more.  One
   * that died in a client's read or write just now has told no client
   * before it, nor that client's other direction (a relay that waits to
   * read the channel while its write failed): conn_die's wake-up stays,
   * for one more dispatch. */
  if (c->dead && dead_before_clients)
    g_source_set_ready_time (source, -1);
  else if (!c->dead)
    update_watch (c);
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs conn_source_funcs = {
  .prepare = conn_prepare,
  .dispatch = conn_dispatch,
};

/* Report the failure once (or keep it for the owner); every client then
 * finds it from its next operation, and the source dispatches once more to
 * wake them. */
static void
conn_die (struct ferry_ssh_conn *c, const char *reason)
{
  c->dead = true;
  c->failure = g_strdup (reason);
  if (!c->owner_reports_failure)
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
  struct ferry_ssh_conn *c = data;

  if (c->counter.in_bytes != c->heard_bytes)
    c->missed = 0;
  else if (++c->missed >= FERRY_KEEPALIVE_PROBES) {
    /* As OpenSSH's ServerAliveCountMax, and as TCP's probes (connect.h). */
    conn_die (c, "the server answered none of " G_STRINGIFY (FERRY_KEEPALIVE_PROBES)
              " keepalives");
    return G_SOURCE_CONTINUE;   /* released by conn_die */
  }
  c->heard_bytes = c->counter.in_bytes;
  if (ssh_send_keepalive (c->session) != SSH_OK)
    check_alive (c);
  update_watch (c);
  return G_SOURCE_CONTINUE;
}

int
ferry_ssh_conn_wait (struct ferry_ssh_conn *c, int (*step) (void *data), void *data, int again)
{
  return ferry_ssh_conn_wait_many (&c, 1, step, data, again);
}

int
ferry_ssh_conn_wait_many (struct ferry_ssh_conn *const *conns, size_t n,
                          int (*step) (void *data), void *data, int again)
{
  g_autofree ssh_session *sessions = g_new (ssh_session, n);

  for (size_t i = 0; i < n; i++)
    sessions[i] = conns[i]->session;
  return ferry_ssh_wait_many (sessions, n, step, data, again, conns[0]->exchange_ms);
}

/* The session's TCP connection made here, and handed to libssh: through
 * --proxy's tunnel, to the host and port that ~/.ssh/config made of the
 * address's; or (@pin not NULL) straight to the pinned numeric address,
 * from the first session's own, within the handshake's bound, while
 * libssh keeps the name for the host key and the config's %h.  libssh
 * takes the socket (and closes it). */
static bool
conn_socket (struct ferry_ssh_conn *c, const struct address *a,
             const struct connect_options *opts, const struct ferry_ssh_pin *pin,
             GError **error)
{
  struct connect_options dial = *opts;
  g_autofree char *configured = NULL;
  g_autofree char *port = NULL;
  unsigned int port_number = 22;
  const char *host;
  socket_t fd;

  if (pin) {
    host = pin->peer;
    port_number = pin->port;
    dial.bind_host = pin->local;
    dial.bind_port = NULL;
    if (dial.timeout == 0)
      dial.timeout = HANDSHAKE_MS / 1000;
  } else if (ssh_options_get (c->session, SSH_OPTIONS_HOST, &configured) != SSH_OK) {
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': %s", a->text,
                            ssh_get_error (c->session));
  } else {
    host = configured;
    ssh_options_get_port (c->session, &port_number);
  }
  port = g_strdup_printf ("%u", port_number);
  fd = tcp_connect (host, port, a->text, &dial, error);
  if (fd < 0)
    return false;
  if (ssh_options_set (c->session, SSH_OPTIONS_FD, &fd) < 0) {
    close (fd);
    return ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': %s", a->text,
                            ssh_get_error (c->session));
  }
  return true;
}

static int
step_connect (void *session)
{
  return ssh_connect (session);
}

/* A new session, connected (the key exchange done) but neither checked
 * nor logged in, and not watched yet: every network wait goes through
 * ferry_ssh_wait, so that a stop signal ends it.  @may_prompt allows the
 * passphrase prompt (the login's own prompts are ferry_ssh_authenticate's).
 * @pin, if not NULL, says where to connect (conn_socket). */
static struct ferry_ssh_conn *
conn_connect (const struct address *a, const struct connect_options *opts, bool may_prompt,
              const struct ferry_ssh_pin *pin, GError **error)
{
  g_autoptr (FerrySshConn) c = g_new0 (struct ferry_ssh_conn, 1);
  unsigned keepalive = opts->keepalive_given ? opts->keepalive : FERRY_DEFAULT_SSH_KEEPALIVE;
  int rc;

  c->refs = 1;
  c->clients = g_ptr_array_new ();
  c->timeout_ms = connect_timeout_ms (opts);
  c->keepalive_seconds = keepalive;
  /* A blocking exchange stops the main loop, and with it the keepalives:
   * unbounded, one on a link that froze would hold ferry for ever. */
  c->exchange_ms = c->timeout_ms >= 0 ? c->timeout_ms
                 : keepalive > 0 ? (int) (keepalive * FERRY_KEEPALIVE_PROBES * 1000) : -1;
  c->prompts.allowed = may_prompt;
  c->session = ssh_new ();
  if (c->session == NULL) {
    ferry_set_error (error, FERRY_EXIT_CONNECT,
                     "cannot connect to '%s': cannot create an ssh session", a->text);
    return NULL;
  }
  c->callbacks.userdata = &c->prompts;
  c->callbacks.auth_function = ferry_ssh_passphrase_prompt;
  ssh_callbacks_init (&c->callbacks);
  ssh_set_callbacks (c->session, &c->callbacks);
  ssh_set_counters (c->session, &c->counter, NULL);

  if (!ferry_ssh_configure (c->session, a, opts, &c->name, error) ||
      ((opts->proxy || pin) && !conn_socket (c, a, opts, pin, error)))
    return NULL;
  ssh_set_blocking (c->session, 0);
  rc = ferry_ssh_wait (c->session, step_connect, c->session, SSH_AGAIN,
                       c->timeout_ms < 0 ? HANDSHAKE_MS : c->timeout_ms);
  if (rc != SSH_OK) {
    ferry_set_error (error, FERRY_EXIT_CONNECT, "cannot connect to '%s': %s", a->text,
                     rc == SSH_AGAIN ? "timed out" : ssh_get_error (c->session));
    return NULL;
  }
  return g_steal_pointer (&c);
}

/* A stop signal that gave up @c's set-up says so, as "stopped by SIGTERM
 * while connecting to ADDRESS", rather than @c's own error. */
static struct ferry_ssh_conn *
conn_finish_setup (struct ferry_ssh_conn *c, bool ok, const struct address *a, GError *failure,
                   GError **error)
{
  if (c && ok)
    return c;
  ferry_ssh_conn_unref (c);
  if (!signal_watch_set_stopped (error, a->text))
    g_propagate_error (error, failure);
  else
    g_clear_error (&failure);
  return NULL;
}

struct ferry_ssh_conn *
ferry_ssh_conn_new (const struct address *a, const struct connect_options *opts,
                    GError **error)
{
  GError *failure = NULL;
  struct ferry_ssh_conn *c = conn_connect (a, opts, opts->ask_password, NULL, &failure);
  bool ok = c && ferry_ssh_verify_host_key (c->session, c->name, a, &failure) &&
            ferry_ssh_authenticate (c->session, c->name, c->exchange_ms, a, &c->prompts,
                                    &failure) &&
            ferry_ssh_conn_watch (c, a, &failure);

  return conn_finish_setup (c, ok, a, failure, error);
}

struct ferry_ssh_conn *
ferry_ssh_conn_new_beside (const struct address *a, const struct connect_options *opts,
                           const struct ferry_ssh_pin *pin, GError **error)
{
  GError *failure = NULL;
  struct ferry_ssh_conn *c = conn_connect (a, opts, false, pin, &failure);
  ssh_key offered = NULL;
  bool ok = c && ssh_get_server_publickey (c->session, &offered) == SSH_OK &&
            ssh_key_cmp (offered, pin->key, SSH_KEY_CMP_PUBLIC) == 0;

  ssh_key_free (offered);
  if (c && !ok)
    ferry_set_error (&failure, FERRY_EXIT_SSH_HOSTKEY,
                     "%s offers another host key than the first session's", c->name);
  ok = ok && ferry_ssh_authenticate (c->session, c->name, c->exchange_ms, a, &c->prompts,
                                     &failure);
  return conn_finish_setup (c, ok, a, failure, error);
}

bool
ferry_ssh_conn_watch (struct ferry_ssh_conn *c, const struct address *a, GError **error)
{
  c->event = ssh_event_new ();
  if (c->event == NULL || ssh_event_add_session (c->event, c->session) != SSH_OK)
    return ferry_set_error (error, FERRY_EXIT_CONNECT,
                            "cannot connect to '%s': cannot watch the ssh session", a->text);
  c->source = (struct conn_source *) g_source_new (&conn_source_funcs, sizeof *c->source);
  c->source->conn = c;
  c->events = G_IO_IN;
  c->source->tag = g_source_add_unix_fd (&c->source->source, ssh_get_fd (c->session), c->events);
  gsource_attach (&c->source->source);
  if (c->keepalive_seconds > 0)
    c->keepalive = gsource_timer_new (c->keepalive_seconds, on_keepalive, c);
  c->watched = true;
  return true;
}

bool
ferry_ssh_conn_prompted (struct ferry_ssh_conn *c)
{
  return c->prompts.used;
}

/* @addr's numeric host, or NULL. */
static char *
numeric_host (const struct sockaddr_storage *addr, socklen_t len)
{
  char name[NI_MAXHOST];

  if ((addr->ss_family != AF_INET && addr->ss_family != AF_INET6) ||
      getnameinfo ((const struct sockaddr *) addr, len, name, sizeof name, NULL, 0,
                   NI_NUMERICHOST) != 0)
    return NULL;
  return g_strdup (name);
}

bool
ferry_ssh_conn_pin (struct ferry_ssh_conn *c, struct ferry_ssh_pin *pin)
{
  struct sockaddr_storage peer, local;
  socklen_t peer_len = sizeof peer, local_len = sizeof local;
  int fd = ssh_get_fd (c->session);

  *pin = (struct ferry_ssh_pin) { 0 };
  if (getpeername (fd, (struct sockaddr *) &peer, &peer_len) < 0 ||
      getsockname (fd, (struct sockaddr *) &local, &local_len) < 0 ||
      (pin->peer = numeric_host (&peer, peer_len)) == NULL ||
      (pin->local = numeric_host (&local, local_len)) == NULL ||
      ssh_get_server_publickey (c->session, &pin->key) != SSH_OK) {
    ferry_ssh_pin_clear (pin);
    return false;
  }
  pin->port = ntohs (peer.ss_family == AF_INET ? ((struct sockaddr_in *) &peer)->sin_port
                                               : ((struct sockaddr_in6 *) &peer)->sin6_port);
  return true;
}

void
ferry_ssh_pin_clear (struct ferry_ssh_pin *pin)
{
  g_clear_pointer (&pin->peer, g_free);
  g_clear_pointer (&pin->local, g_free);
  g_clear_pointer (&pin->key, ssh_key_free);
}

struct ferry_ssh_conn *
ferry_ssh_conn_ref (struct ferry_ssh_conn *c)
{
  c->refs++;
  return c;
}

void
ferry_ssh_conn_unref (struct ferry_ssh_conn *c)
{
  if (c == NULL || --c->refs > 0)
    return;
  g_clear_pointer (&c->keepalive, gsource_release);
  release_source (c);
  if (c->event) {
    ssh_event_remove_session (c->event, c->session);
    ssh_event_free (c->event);
  }
  if (c->watched && !c->dead && ssh_is_connected (c->session)) {
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
  g_free (c->failure);
  g_free (c);
}

ssh_session
ferry_ssh_conn_session (struct ferry_ssh_conn *c)
{
  return c->session;
}

const char *
ferry_ssh_conn_name (struct ferry_ssh_conn *c)
{
  return c->name;
}

bool
ferry_ssh_conn_is_dead (struct ferry_ssh_conn *c)
{
  return c->dead;
}

void
ferry_ssh_conn_report_failure_myself (struct ferry_ssh_conn *c)
{
  c->owner_reports_failure = true;
}

const char *
ferry_ssh_conn_failure (struct ferry_ssh_conn *c)
{
  return c->failure;
}

guint64
ferry_ssh_conn_bytes_in (struct ferry_ssh_conn *c)
{
  return c->counter.in_bytes;
}

/* The channel's callbacks only note what came; libssh keeps the data
 * (a data callback that takes 0 bytes leaves them buffered), and the
 * client's next read takes them. */
static int
on_channel_data (ssh_session session, ssh_channel channel, void *bytes, uint32_t len,
                 int is_stderr, void *userdata)
{
  struct ferry_ssh_client *cl = userdata;

  (void) session; (void) channel; (void) bytes; (void) len; (void) is_stderr;
  cl->maybe_buffered = true;
  return 0;
}

static void
note_state_change (struct ferry_ssh_client *cl)
{
  cl->maybe_buffered = cl->state_changed = true;
}

static void
on_channel_eof_or_close (ssh_session session, ssh_channel channel, void *userdata)
{
  (void) session; (void) channel;
  note_state_change (userdata);
}

static void
on_channel_exit_status (ssh_session session, ssh_channel channel, int status, void *userdata)
{
  (void) session; (void) channel; (void) status;
  note_state_change (userdata);
}

static void
on_channel_exit_signal (ssh_session session, ssh_channel channel, const char *signal,
                        int core, const char *errmsg, const char *lang, void *userdata)
{
  (void) session; (void) channel; (void) signal; (void) core; (void) errmsg; (void) lang;
  note_state_change (userdata);
}

void
ferry_ssh_conn_attach (struct ferry_ssh_conn *c, struct ferry_ssh_client *client,
                       ssh_channel channel)
{
  client->channel = channel;
  client->maybe_buffered = true;  /* whatever came while it was opened */
  client->callbacks = (struct ssh_channel_callbacks_struct) {
    .userdata = client,
    .channel_data_function = on_channel_data,
    .channel_eof_function = on_channel_eof_or_close,
    .channel_close_function = on_channel_eof_or_close,
    .channel_exit_status_function = on_channel_exit_status,
    .channel_exit_signal_function = on_channel_exit_signal,
  };
  ssh_callbacks_init (&client->callbacks);
  ssh_add_channel_callbacks (channel, &client->callbacks);
  g_ptr_array_add (c->clients, client);
}

void
ferry_ssh_conn_detach (struct ferry_ssh_conn *c, struct ferry_ssh_client *client)
{
  ssh_remove_channel_callbacks (client->channel, &client->callbacks);
  g_ptr_array_remove (c->clients, client);
}

void
ferry_ssh_conn_wake_dead (struct ferry_ssh_conn *c)
{
  if (c->dead && c->source)
    g_source_set_ready_time (&c->source->source, 0);
}

void
ferry_ssh_conn_update (struct ferry_ssh_conn *c)
{
  check_alive (c);
  update_watch (c);
}
