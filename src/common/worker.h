/* ferry: worker threads for listen-and-forward.  Each worker runs a main
 * context of its own, so that relays of different connections use every
 * core.  Code reaches a worker through its context (g_main_context_invoke,
 * which runs callbacks in the order they were queued), and every source
 * created there attaches to it (gsource_attach). */
#ifndef FERRY_WORKER_H
#define FERRY_WORKER_H

#include <glib.h>

struct worker_pool;
struct worker;

/* Up to @n_workers threads, each started when first needed. */
struct worker_pool *worker_pool_new (unsigned n_workers);

/* The worker with the fewest connections, counting the new one; NULL if no
 * thread could be started (the caller then stays on its own loop). */
struct worker *worker_pool_take (struct worker_pool *pool);

/* The connection that worker_pool_take counted has ended. */
void worker_release (struct worker *worker);

GMainContext *worker_context (struct worker *worker);

/* Stop every worker once what was queued for it has run, and join it. */
void worker_pool_free (struct worker_pool *pool);

#endif
