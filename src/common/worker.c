/* ferry: worker threads, each running its own main context. */
#include <config.h>

#include "worker.h"

#include <stdbool.h>

struct worker {
  GThread *thread;            /* NULL until first taken */
  GMainContext *context;      /* the thread's default context */
  GMainLoop *loop;            /* runs @context until the pool is freed */
  unsigned load;              /* connections taken and not released;
                                 counted on the thread that takes them */
};

struct worker_pool {
  unsigned n_workers;
  struct worker workers[];
};

static gpointer
worker_run (gpointer data)
{
  struct worker *w = data;

  g_main_context_push_thread_default (w->context);
  g_main_loop_run (w->loop);
  /* What the last callbacks queued, such as deferred source releases. */
  while (g_main_context_iteration (w->context, FALSE))
    ;
  g_main_context_pop_thread_default (w->context);
  return NULL;
}

struct worker_pool *
worker_pool_new (unsigned n_workers)
{
  struct worker_pool *pool;

  n_workers = MAX (n_workers, 1);
  pool = g_malloc0 (sizeof *pool + n_workers * sizeof pool->workers[0]);
  pool->n_workers = n_workers;
  return pool;
}

static bool
worker_start (struct worker *w)
{
  g_autoptr (GError) error = NULL;

  w->context = g_main_context_new ();
  w->loop = g_main_loop_new (w->context, FALSE);
  w->thread = g_thread_try_new ("ferry-worker", worker_run, w, &error);
  if (w->thread == NULL) {
    g_clear_pointer (&w->loop, g_main_loop_unref);
    g_clear_pointer (&w->context, g_main_context_unref);
    return false;
  }
  return true;
}

struct worker *
worker_pool_take (struct worker_pool *pool)
{
  struct worker *w = &pool->workers[0];

  for (unsigned i = 1; i < pool->n_workers && w->load > 0; i++) {
    if (pool->workers[i].load < w->load)
      w = &pool->workers[i];
  }
  if (w->thread == NULL && !worker_start (w))
    return NULL;
  w->load++;
  return w;
}

void
worker_release (struct worker *w)
{
  g_assert (w->load > 0);
  w->load--;
}

GMainContext *
worker_context (struct worker *w)
{
  return w->context;
}

static gboolean
quit_loop (gpointer data)
{
  g_main_loop_quit (data);
  return G_SOURCE_REMOVE;
}

void
worker_pool_free (struct worker_pool *pool)
{
  if (pool == NULL)
    return;
  for (unsigned i = 0; i < pool->n_workers; i++) {
    struct worker *w = &pool->workers[i];

    if (w->thread == NULL)
      continue;
    /* Queued, not g_main_loop_quit: a quit before the loop runs is lost. */
    g_main_context_invoke (w->context, quit_loop, w->loop);
    g_thread_join (w->thread);
    g_main_loop_unref (w->loop);
    g_main_context_unref (w->context);
  }
  g_free (pool);
}
