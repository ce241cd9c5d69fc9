/* ferry: the ssh sessions of a remote copy's streams
 * (ssh-stream-sessions.h). */
#include <config.h>

#include "ssh-stream-sessions.h"

#include "signal-watch.h"
#include "ssh-session.h"

/* How often a session waiting for the host key looks for a stop signal. */
#define TRUST_CHECK_US (200 * 1000)
/* Sessions beside the first, at most: OpenSSH's sshd starts refusing
 * connections that have not logged in yet at 10 (MaxStartups 10:30:100);
 * the first is one of them, and another client's may be. */
#define MAX_BESIDE 8

struct stream_session {
  struct session_set *set;
  GThread *thread;
  struct ferry_ssh_conn *conn;  /* its result: logged in, not watched yet */
  GError *error;                /* or why not */
};

/* The sessions beside the first, on their threads. */
struct session_set {
  const struct address *address;
  const struct connect_options *options;
  char *host;                 /* the first session's peer: every session */
  unsigned port;              /* reaches the same machine */
  bool started;               /* the threads run */
  GMutex lock;
  GCond trusted;              /* signalled once verdict is set */
  bool verdict;               /* the first session logged in, or did not */
  ssh_key key;                /* the host key it checked, if it logged in
                                 without a prompt; else NULL */
  struct stream_session *sessions;
  size_t n;
};

/* ferry_ssh_conn_new_beside's @trusted: the first session's verdict, once
 * it is known (or a stop signal, which gives up). */
static ssh_key
await_trust (void *data)
{
  struct session_set *set = data;
  ssh_key key;

  g_mutex_lock (&set->lock);
  while (!set->verdict && !signal_watch_stop_pending ())
    g_cond_wait_until (&set->trusted, &set->lock, g_get_monotonic_time () + TRUST_CHECK_US);
  key = set->key;
  g_mutex_unlock (&set->lock);
  return key;
}

/* The verdict: @first's host key, or with NULL none (the first failed, or
 * logged in only at a prompt). */
static void
trust (struct ferry_ssh_conn *first, void *data)
{
  struct session_set *set = data;
  ssh_key key = first ? ferry_ssh_conn_host_key (first) : NULL;

  g_mutex_lock (&set->lock);
  if (!set->verdict) {
    set->key = key;
    set->verdict = true;
    key = NULL;
  }
  g_cond_broadcast (&set->trusted);
  g_mutex_unlock (&set->lock);
  ssh_key_free (key);
}

static gpointer
connect_session (gpointer data)
{
  struct stream_session *s = data;

  s->conn = ferry_ssh_conn_new_beside (s->set->address, s->set->options, s->set->host,
                                       s->set->port, await_trust, s->set, &s->error);
  return NULL;
}

static struct session_set *
session_set_new (const struct address *address, const struct connect_options *options, size_t n)
{
  struct session_set *set = g_new0 (struct session_set, 1);

  set->address = address;
  set->options = options;
  g_mutex_init (&set->lock);
  g_cond_init (&set->trusted);
  set->sessions = g_new0 (struct stream_session, n);
  set->n = n;
  return set;
}

/* ferry_ssh_conn_new_first's @connected: the first session's server took
 * the connection; the others connect to the same address, unless it runs
 * through a proxy (--proxy, or a ProxyCommand's pipe), whose far end they
 * could not pin. */
static void
start_sessions (struct ferry_ssh_conn *first, void *data)
{
  struct session_set *set = data;

  if (set->options->proxy || !ferry_ssh_conn_peer_address (first, &set->host, &set->port))
    return;
  set->started = true;
  for (size_t i = 0; i < set->n; i++) {
    set->sessions[i].set = set;
    set->sessions[i].thread = g_thread_new ("ssh-session", connect_session, &set->sessions[i]);
  }
}

/* Wait for every session's set-up (a verdict not given yet is a refusal),
 * then free @set: @conns[i] becomes the i-th session, watched on the main
 * loop, or NULL, with the first failure's reason in *@why.  Returns how
 * many were made. */
static size_t
finish_sessions (struct session_set *set, struct ferry_ssh_conn **conns, char **why)
{
  size_t made = 0;

  trust (NULL, set);
  for (size_t i = 0; set->started && i < set->n; i++) {
    struct stream_session *s = &set->sessions[i];
    g_thread_join (s->thread);
    if (s->conn && !ferry_ssh_conn_watch (s->conn, set->address, &s->error))
      g_clear_pointer (&s->conn, ferry_ssh_conn_unref);
    if (s->error && *why == NULL)
      *why = g_strdup (s->error->message);
    g_clear_error (&s->error);
    made += s->conn != NULL;
    conns[i] = s->conn;
  }
  ssh_key_free (set->key);
  g_free (set->host);
  g_mutex_clear (&set->lock);
  g_cond_clear (&set->trusted);
  g_free (set->sessions);
  g_free (set);
  return made;
}

bool
ssh_stream_sessions_connect (const struct address *address,
                             const struct connect_options *options, size_t n, bool per_stream,
                             struct ferry_ssh_conn **conns, size_t *own, char **why,
                             GError **error)
{
  struct session_set *beside = NULL;
  size_t made = 1;

  *own = 0;
  *why = NULL;
  for (size_t i = 0; i < n; i++)
    conns[i] = NULL;
  if (per_stream && n > 1)
    beside = session_set_new (address, options, MIN (n - 1, MAX_BESIDE));
  conns[0] = ferry_ssh_conn_new_first (address, options, beside ? start_sessions : NULL, beside,
                                       error);
  if (beside) {
    bool prompted = conns[0] && ferry_ssh_conn_prompted (conns[0]);
    bool started = beside->started;
    trust (prompted ? NULL : conns[0], beside);
    *own = finish_sessions (beside, conns + 1, why);
    if (prompted || !started)
      g_free (g_steal_pointer (why));
    if (prompted)
      *why = g_strdup ("the login took answers at the terminal");
    else if (!started)
      *why = g_strdup ("the connection runs through a proxy");
    else if (*why == NULL && *own < n - 1)
      *why = g_strdup_printf ("at most %d log in at once beside the first (sshd's MaxStartups)",
                              MAX_BESIDE);
  }
  if (conns[0] == NULL) {
    for (size_t i = 1; i < n; i++)
      g_clear_pointer (&conns[i], ferry_ssh_conn_unref);
    g_clear_pointer (why, g_free);
    return false;
  }
  /* The sessions made first, then each stream without one takes a
   * channel on them in turn. */
  for (size_t i = 1; i < n; i++)
    if (conns[i])
      conns[made++] = conns[i];
  for (size_t i = made; i < n; i++)
    conns[i] = ferry_ssh_conn_ref (conns[(i - made) % made]);
  return true;
}
