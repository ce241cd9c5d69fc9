/* ferry: the ssh sessions of a remote copy's streams
 * (ssh-stream-sessions.h). */
#include <config.h>

#include "ssh-stream-sessions.h"

#include "signal-watch.h"
#include "ssh-session.h"

/* How often a session waiting for the host key looks for a stop signal. */
#define TRUST_CHECK_US (200 * 1000)
/* Sessions beside the first, at most: OpenSSH's sshd starts refusing
 * connections that have not logged in yet at 10 (MaxStartups 10:30:100),
 * and the first is one of them. */
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
  GMutex lock;
  GCond trusted;              /* signalled once verdict is set */
  bool verdict;               /* the first session checked the host key, or failed */
  ssh_key key;                /* the host key it checked; NULL: none */
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

/* The verdict: @first's host key, or with NULL none (the first failed). */
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

  s->conn = ferry_ssh_conn_new_beside (s->set->address, s->set->options, await_trust, s->set,
                                       &s->error);
  return NULL;
}

static struct session_set *
start_sessions (const struct address *address, const struct connect_options *options, size_t n)
{
  struct session_set *set = g_new0 (struct session_set, 1);

  set->address = address;
  set->options = options;
  g_mutex_init (&set->lock);
  g_cond_init (&set->trusted);
  set->sessions = g_new0 (struct stream_session, n);
  set->n = n;
  for (size_t i = 0; i < n; i++) {
    set->sessions[i].set = set;
    set->sessions[i].thread = g_thread_new ("ssh-session", connect_session, &set->sessions[i]);
  }
  return set;
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
  for (size_t i = 0; i < set->n; i++) {
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
  g_mutex_clear (&set->lock);
  g_cond_clear (&set->trusted);
  g_free (set->sessions);
  g_free (set);
  return made;
}

bool
ssh_stream_sessions_connect (const struct address *address,
                             const struct connect_options *options, size_t n,
                             struct ferry_ssh_conn **conns, size_t *own, char **why,
                             GError **error)
{
  size_t beside_n = MIN (n - 1, MAX_BESIDE), made = 1;
  struct session_set *beside = NULL;

  *own = 0;
  *why = NULL;
  if (beside_n > 0 && !options->ask_password)
    beside = start_sessions (address, options, beside_n);
  conns[0] = ferry_ssh_conn_new_first (address, options, beside ? trust : NULL, beside, error);
  if (beside_n > 0 && conns[0] && beside == NULL) {
    if (ferry_ssh_conn_prompted (conns[0])) {
      *why = g_strdup ("the login took answers at the terminal");
    } else {
      beside = start_sessions (address, options, beside_n);
      trust (conns[0], beside);
    }
  }
  if (beside)
    *own = finish_sessions (beside, conns + 1, why);
  if (conns[0] == NULL) {
    for (size_t i = 1; i < n; i++)
      g_clear_pointer (&conns[i], ferry_ssh_conn_unref);
    g_clear_pointer (why, g_free);
    return false;
  }
  if (*why == NULL && *own < n - 1)
    *why = g_strdup_printf ("at most %d log in at once beside the first (sshd's MaxStartups)",
                            MAX_BESIDE);
  /* The sessions made first, then each stream without one takes a
   * channel on them in turn. */
  for (size_t i = 1; i < n; i++)
    if (conns[i])
      conns[made++] = conns[i];
  for (size_t i = made; i < n; i++)
    conns[i] = ferry_ssh_conn_ref (conns[(i - made) % made]);
  return true;
}
