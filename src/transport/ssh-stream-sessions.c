/* ferry: the ssh sessions of a remote copy's streams
 * (ssh-stream-sessions.h). */
#include <config.h>

#include "ssh-stream-sessions.h"

#include "ssh-session.h"

/* Sessions after the first, at most: OpenSSH's sshd starts refusing
 * connections that have not logged in yet at 10 (MaxStartups 10:30:100),
 * and another client's may be among them. */
#define MAX_BESIDE 8

/* What every session after the first needs. */
struct pinned {
  const struct address *address;
  const struct connect_options *options;
  struct ferry_ssh_pin pin;
};

struct stream_session {
  const struct pinned *pinned;
  GThread *thread;              /* NULL if it could not start */
  struct ferry_ssh_conn *conn;  /* its result: logged in, not watched yet */
  GError *error;                /* or why not */
};

static gpointer
connect_session (gpointer data)
{
  struct stream_session *s = data;
  const struct pinned *p = s->pinned;

  s->conn = ferry_ssh_conn_new_beside (p->address, p->options, &p->pin, &s->error);
  return NULL;
}

/* @n sessions after the first, at once on threads: @conns[i] the i-th,
 * watched on the main loop, or NULL, with the first failure's reason in
 * *@why.  Returns how many were made. */
static size_t
connect_beside (const struct pinned *p, size_t n, struct ferry_ssh_conn **conns, char **why)
{
  g_autofree struct stream_session *sessions = g_new0 (struct stream_session, n);
  size_t made = 0;

  for (size_t i = 0; i < n; i++) {
    sessions[i].pinned = p;
    sessions[i].thread = g_thread_try_new ("ssh-session", connect_session, &sessions[i],
                                           &sessions[i].error);
  }
  for (size_t i = 0; i < n; i++) {
    struct stream_session *s = &sessions[i];
    if (s->thread)
      g_thread_join (s->thread);
    if (s->conn && !ferry_ssh_conn_watch (s->conn, p->address, &s->error))
      g_clear_pointer (&s->conn, ferry_ssh_conn_unref);
    if (s->error && *why == NULL)
      *why = g_strdup (s->error->message);
    g_clear_error (&s->error);
    made += s->conn != NULL;
    conns[i] = s->conn;
  }
  return made;
}

/* Why no session can be made after @first, or NULL if they can; then
 * @p->pin is filled in. */
static char *
cannot_pin (struct ferry_ssh_conn *first, const struct connect_options *options,
            struct pinned *p)
{
  if (ferry_ssh_conn_prompted (first))
    return g_strdup ("the login took answers at the terminal");
  if (options->proxy)
    return g_strdup ("the connection runs through --proxy");
  if (!ferry_ssh_conn_pin (first, &p->pin))
    return g_strdup ("the connection is not TCP of ferry's own (a ProxyCommand)");
  return NULL;
}

bool
ssh_stream_sessions_connect (const struct address *address,
                             const struct connect_options *options, size_t n, bool per_stream,
                             struct ferry_ssh_conn **conns, size_t *own, char **why,
                             GError **error)
{
  struct pinned p = { address, options, { 0 } };
  size_t beside = MIN (n - 1, MAX_BESIDE), made = 1;

  *own = 0;
  *why = NULL;
  for (size_t i = 0; i < n; i++)
    conns[i] = NULL;
  conns[0] = ferry_ssh_conn_new (address, options, error);
  if (conns[0] == NULL)
    return false;
  if (per_stream && beside > 0 && (*why = cannot_pin (conns[0], options, &p)) == NULL) {
    *own = connect_beside (&p, beside, conns + 1, why);
    if (*why == NULL && *own < n - 1)
      *why = g_strdup_printf ("at most %d log in after the first (sshd's MaxStartups)",
                              MAX_BESIDE);
  }
  ferry_ssh_pin_clear (&p.pin);
  /* The sessions made first, then each stream without one takes a
   * channel on them in turn. */
  for (size_t i = 1; i < n; i++)
    if (conns[i])
      conns[made++] = conns[i];
  for (size_t i = made; i < n; i++)
    conns[i] = ferry_ssh_conn_ref (conns[(i - made) % made]);
  return true;
}
