/* ferry: version-gated GSource release.
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
gsource_release (GSource *source)
{
  if (source == NULL)
    return;
  g_source_destroy (source);
#if FERRY_DEFER_UNREF
  g_idle_add (unref_when_idle, source);
#else
  g_source_unref (source);
#endif
}
