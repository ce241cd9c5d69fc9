/* ferry: a GSource that drives one libnbd handle on the glib main loop.
 *
 * The handle's fd is polled for the direction libnbd wants.  The poll
 * events are changed only when nbd_aio_get_direction changes: updating
 * them on every prepare (as libnbd's glib example does) costs several
 * times the CPU.  libnbd runs completion callbacks from inside notify,
 * with the handle locked, so they must not call nbd_* on it: the copy
 * loops only mark the command done and defer the follow-up work. */
#include <config.h>

#include "gsource-release.h"
#include "nbd-aio-source.h"

struct nbd_aio_source {
  GSource source;
  struct nbd_handle *nbd;
  gpointer tag;               /* from g_source_add_unix_fd, for @fd */
  int fd;                     /* the handle's fd when @tag was added; -1 none */
  unsigned direction;         /* LIBNBD_AIO_DIRECTION_* that @tag polls for */
  bool failed;                /* on_failure was called: poll nothing more */
  void (*on_failure) (void *data, const char *reason);
  void *data;
};

static GIOCondition
events_for (unsigned direction)
{
  return (direction & LIBNBD_AIO_DIRECTION_READ ? G_IO_IN : 0) |
         (direction & LIBNBD_AIO_DIRECTION_WRITE ? G_IO_OUT : 0);
}

static gboolean
aio_prepare (GSource *source, gint *timeout)
{
  struct nbd_aio_source *s = (struct nbd_aio_source *) source;
  int fd;
  unsigned direction;

  *timeout = -1;
  if (s->failed)
    return FALSE;
  fd = nbd_aio_get_fd (s->nbd);
  direction = fd >= 0 ? nbd_aio_get_direction (s->nbd) : 0;
  if (fd != s->fd) {
    if (s->tag)
      g_source_remove_unix_fd (source, s->tag);
    s->tag = fd >= 0 ? g_source_add_unix_fd (source, fd, events_for (direction)) : NULL;
    s->fd = fd;
    s->direction = direction;
  } else if (direction != s->direction && s->tag) {
    g_source_modify_unix_fd (source, s->tag, events_for (direction));
    s->direction = direction;
  }
  return FALSE;
}

static gboolean
aio_check (GSource *source)
{
  struct nbd_aio_source *s = (struct nbd_aio_source *) source;

  return s->tag && g_source_query_unix_fd (source, s->tag) != 0;
}

static gboolean
aio_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  struct nbd_aio_source *s = (struct nbd_aio_source *) source;
  GIOCondition revents = s->tag ? g_source_query_unix_fd (source, s->tag) : 0;
  int r = 0;

  /* With both ready, reading first lets libnbd retire replies before it
   * queues more requests (libnbd's advice). */
  if (revents & (G_IO_IN | G_IO_HUP | G_IO_ERR))
    r = nbd_aio_notify_read (s->nbd);
  else if (revents & G_IO_OUT)
    r = nbd_aio_notify_write (s->nbd);
  if (r == -1 || nbd_aio_is_dead (s->nbd) || nbd_aio_is_closed (s->nbd)) {
    s->failed = true;
    if (s->tag)
      g_source_remove_unix_fd (source, s->tag);
    s->tag = NULL;
    s->on_failure (s->data, nbd_get_error () ? nbd_get_error () : "connection closed");
  }
  return G_SOURCE_CONTINUE;
}

static GSourceFuncs aio_source_funcs = {
  .prepare = aio_prepare,
  .check = aio_check,
  .dispatch = aio_dispatch,
};

GSource *
nbd_aio_source_new (struct nbd_handle *nbd,
                    void (*on_failure) (void *data, const char *reason), void *data)
{
  GSource *source = g_source_new (&aio_source_funcs, sizeof (struct nbd_aio_source));
  struct nbd_aio_source *s = (struct nbd_aio_source *) source;

  s->nbd = nbd;
  s->fd = -1;
  s->on_failure = on_failure;
  s->data = data;
  g_source_set_name (source, "nbd-aio");
  return source;
}

struct kick_source {
  GSource source;
  bool *kicked;
};

static gboolean
kick_prepare (GSource *source, gint *timeout)
{
  *timeout = -1;
  return __atomic_load_n (((struct kick_source *) source)->kicked, __ATOMIC_ACQUIRE);
}

static gboolean
kick_check (GSource *source)
{
  return __atomic_load_n (((struct kick_source *) source)->kicked, __ATOMIC_ACQUIRE);
}

static gboolean
kick_dispatch (GSource *source, GSourceFunc callback, gpointer data)
{
  /* Before the work is looked at: a worker's kick from now on wakes the
   * loop again (kick.h). */
  __atomic_store_n (((struct kick_source *) source)->kicked, false, __ATOMIC_SEQ_CST);
  return callback (data);
}

static GSourceFuncs kick_source_funcs = {
  .prepare = kick_prepare,
  .check = kick_check,
  .dispatch = kick_dispatch,
};

GSource *
nbd_kick_source_new (bool *kicked, GSourceFunc pump, void *data)
{
  GSource *source = g_source_new (&kick_source_funcs, sizeof (struct kick_source));

  ((struct kick_source *) source)->kicked = kicked;
  g_source_set_callback (source, pump, data, NULL);
  g_source_set_name (source, "nbd-stream-pump");
  gsource_attach (source);
  return source;
}
