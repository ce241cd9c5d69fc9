/* ferry: attaching GSources to the calling thread's context, and the
 * version-gated release.
 *
 * Before glib 2.64, dropping the last reference to a GSource from another
 * source's dispatch could race with the main context still iterating over it
 * (glib issue #1895), so the unref had to be deferred to an idle callback.
 * From 2.64 on a plain g_source_unref is safe and cheaper.  The meson option
 * force_deferred_unref builds the old branch on a new glib so CI can run the
 * suite against both. */
#include <config.h>

#include "gsource-release.h"

#if GLIB_CHECK_VERSION (2, 64, 0) && !FERRY_FORCE_DEFERRED_UNREF
# define FERRY_DEFER_UNREF 0
#else
# define FERRY_DEFER_UNREF 1
#endif

#if FERRY_DEFER_UNREF
static gboolean
unref_when_idle (gpointer data)
{
  g_source_unref (data);
  return G_SOURCE_REMOVE;
}
#endif

void
gsource_attach (GSource *source)
{
  g_source_attach (source, g_main_context_get_thread_default ());
}

GSource *
gsource_timer_new (unsigned seconds, GSourceFunc fn, void *data)
{
  GSource *timer = g_timeout_source_new (MIN (seconds, G_MAXUINT / 1000) * 1000);

  g_source_set_callback (timer, fn, data, NULL);
  gsource_attach (timer);
  return timer;
}

void
gsource_release (GSource *source)
{
  if (source == NULL)
    return;
#if FERRY_DEFER_UNREF
  /* The idle runs where @source ran: a worker's context is not the main one. */
  GMainContext *context = g_source_get_context (source);
  GSource *idle = g_idle_source_new ();

  g_source_destroy (source);
  /* A later dispatch is all the workaround needs; at idle priority a busy
   * loop held every released source until it went quiet (forward-load:
   * 2 MiB more RSS after 2000 connections in this build). */
  g_source_set_priority (idle, G_PRIORITY_DEFAULT);
  g_source_set_callback (idle, unref_when_idle, source, NULL);
  g_source_attach (idle, context);
  g_source_unref (idle);
#else
  g_source_destroy (source);
  g_source_unref (source);
#endif
}
