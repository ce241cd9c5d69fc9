/* ferry: the NBD kind of export (export-ops.h): a URI (anything
 * nbd_connect_uri takes) or nbdcopy's '[ CMD ARGS... ]' (a server started
 * with systemd socket activation: server-command.h), on libnbd's AIO API
 * and the glib main loop; more connections when the server advertises
 * multi-conn. */
#include <config.h>

#include <errno.h>
#include <string.h>

#include "error.h"
#include "export-ops.h"
#include "gsource-release.h"
#include "nbd-aio-source.h"
#include "nbd-export.h"
#include "server-command.h"
#include "signal-watch.h"

static void
on_conn_failure (void *data, const char *reason)
{
  struct nbd_export *e = data;

  if (!e->lost)
    e->lost = g_error_new (FERRY_ERROR, FERRY_EXIT_NBD,
                           "NBD connection to %s lost: %s", e->name, reason);
  __atomic_store_n (e->kicked, true, __ATOMIC_RELEASE);
}

/* '[ CMD ]': its server, started here (server-command.h), on the
 * connection's socket; false with *@error (exit 3) if it did not serve:
 * "cannot open NAME" and its own words, for ferry's qemu-nbd. */
static bool
connect_server (struct nbd_export *e, struct nbd_handle *nbd,
                const struct nbd_stream_options *options, GError **error)
{
  struct server_command *server = g_new0 (struct server_command, 1);
  int fd = server_command_start (server, options->command, options->image_server, e->name,
                                 error);
  g_autofree char *reason = NULL;

  e->kind = server;
  if (fd < 0)
    return false;
  if (nbd_connect_socket (nbd, fd) == 0) {
    server_command_serving (server);
    return true;
  }
  reason = server_command_reason (server);
  if (reason)
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot open %s: %s", e->name, reason);
  else
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot connect to %s: %s", e->name,
                 nbd_get_error () ? nbd_get_error () : g_strerror (errno));
  return false;
}

static struct nbd_handle *
connect_one (struct nbd_export *e, const struct nbd_stream_options *options,
             const char *uri, bool writing, GError **error)
{
  struct nbd_handle *nbd = nbd_create ();

  if (nbd == NULL ||
      nbd_set_handle_name (nbd, writing ? "ferry-receive" : "ferry-send") == -1 ||
      nbd_set_pread_initialize (nbd, false) == -1 ||
      nbd_set_uri_allow_local_file (nbd, true) == -1 ||
      ((!writing || options->delta) &&
       nbd_add_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1)) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot connect to %s: %s",
                 e->name, nbd_get_error () ? nbd_get_error () : g_strerror (errno));
  } else if (strcmp (uri, "[") == 0 ? connect_server (e, nbd, options, error)
                                    : nbd_connect_uri (nbd, uri) == 0) {
    return nbd;
  } else if (strcmp (uri, "[") != 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot connect to %s: %s",
                 e->name, nbd_get_error () ? nbd_get_error () : g_strerror (errno));
  }
  if (nbd)
    nbd_close (nbd);
  return NULL;
}

static void
attach (struct nbd_export *e, struct nbd_handle *nbd)
{
  struct nbd_conn *c = &e->conn[e->n_conns++];

  c->nbd = nbd;
  c->source = nbd_aio_source_new (nbd, on_conn_failure, e);
  gsource_attach (c->source);
}

static bool
open_export (struct nbd_export *e, const struct nbd_stream_options *options,
             const char *uri, bool writing, GError **error)
{
  struct nbd_handle *nbd;
  int64_t size;
  unsigned want = options->connections ? (unsigned) options->connections
                                       : NBD_STREAM_MAX_CONNECTIONS;

  nbd = connect_one (e, options, uri, writing, error);
  if (nbd == NULL)
    return false;
  attach (e, nbd);
  size = nbd_get_size (nbd);
  if (size < 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_NBD, "%s: cannot get the export size: %s",
                 e->name, nbd_get_error ());
    return false;
  }
  e->size = size;
  if (writing && nbd_is_read_only (nbd) == 1) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_NBD, "%s: the export is read-only", e->name);
    return false;
  }
  e->can_zero = nbd_can_zero (nbd) == 1;
  e->can_fast_zero = nbd_can_fast_zero (nbd) == 1;
  e->can_flush = nbd_can_flush (nbd) == 1;
  e->can_multi_conn = nbd_can_multi_conn (nbd) == 1;
  /* --delta: DEST's digests skip its holes too (nbd-block-digests.c). */
  e->has_map = (!writing || options->delta) && !options->no_extents &&
               nbd_can_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
  if (!nbd_export_set_request_size (e, options->request_size,
                                    nbd_get_block_size (nbd, LIBNBD_SIZE_PREFERRED),
                                    nbd_get_block_size (nbd, LIBNBD_SIZE_MAXIMUM), error))
    return false;
  /* A command's server is a child of this one connection. */
  if (strcmp (uri, "[") == 0 || !e->can_multi_conn)
    want = 1;
  while (e->n_conns < want) {
    nbd = connect_one (e, options, uri, writing, error);
    if (nbd == NULL)
      return false;
    attach (e, nbd);
  }
  return true;
}

static bool
kind_open (struct nbd_export *e, const struct nbd_stream_options *options, const char *uri,
           bool writing, GError **error)
{
  g_autofree char *connecting = NULL;
  bool ok;

  /* libnbd's connect retries its poll on EINTR: a server that never
   * answers would make SIGTERM wait for ever.  Nothing is written yet. */
  /* One that came before, while the stops waited blocked for this
   * process's watch, is not waited on either. */
  if (signal_watch_set_stopped (error, e->name))
    return false;
  connecting = g_strdup_printf (" while connecting to %s\n", e->name);
  signal_watch_exit_on_stop (connecting);
  ok = open_export (e, options, uri, writing, error);
  signal_watch_exit_on_stop (NULL);
  return ok;
}

/* True for a command's cookie; false for -1, with libnbd's errno in
 * *@error.  A connection that died here is lost, as its source would say
 * at its next dispatch, which may never come: libnbd queues a command
 * whose send fails (and fails it, with those in flight, at once), then
 * refuses the next one. */
static bool
issued (struct nbd_export *e, struct nbd_conn *c, int64_t cookie, int *error)
{
  if (cookie == -1)
    *error = nbd_get_errno () ? nbd_get_errno () : EIO;
  if (nbd_aio_is_dead (c->nbd) || nbd_aio_is_closed (c->nbd)) {
    const char *reason = nbd_get_error ();
    on_conn_failure (e, reason ? reason : "connection closed");
  }
  return cookie != -1;
}

static bool
kind_pread (struct nbd_export *e, struct nbd_conn *c, void *buf, uint64_t count,
            uint64_t offset, nbd_completion_callback done, int *error)
{
  return issued (e, c, nbd_aio_pread (c->nbd, buf, count, offset, done, 0), error);
}

static bool
kind_pwrite (struct nbd_export *e, struct nbd_conn *c, const void *buf, uint64_t count,
             uint64_t offset, nbd_completion_callback done, int *error)
{
  return issued (e, c, nbd_aio_pwrite (c->nbd, buf, count, offset, done, 0), error);
}

static bool
kind_zero (struct nbd_export *e, struct nbd_conn *c, uint64_t count, uint64_t offset,
           bool allocate, nbd_completion_callback done, int *error)
{
  return issued (e, c, nbd_aio_zero (c->nbd, count, offset, done,
                                     allocate ? LIBNBD_CMD_FLAG_NO_HOLE : 0), error);
}

static bool
kind_flush (struct nbd_export *e, struct nbd_conn *c, nbd_completion_callback done,
            int *error)
{
  return issued (e, c, nbd_aio_flush (c->nbd, done, 0), error);
}

static bool
kind_block_status (struct nbd_export *e, struct nbd_conn *c, uint64_t count, uint64_t offset,
                   nbd_extent_callback extent, nbd_completion_callback done, int *error)
{
  return issued (e, c, nbd_aio_block_status (c->nbd, count, offset, extent, done, 0), error);
}

static void
kind_finish (struct nbd_export *e)
{
  /* nbd_shutdown waits for the server to close, as a connect waits. */
  g_autofree char *disconnecting = g_strdup_printf (" while disconnecting from %s\n",
                                                    e->name);

  signal_watch_exit_on_stop (disconnecting);
  for (unsigned i = 0; i < e->n_conns; i++)
    if (nbd_aio_is_ready (e->conn[i].nbd))
      nbd_shutdown (e->conn[i].nbd, 0);
  signal_watch_exit_on_stop (NULL);
}

static void
kind_close (struct nbd_export *e)
{
  for (unsigned i = 0; i < e->n_conns; i++) {
    gsource_release (e->conn[i].source);
    nbd_close (e->conn[i].nbd);
  }
  if (e->kind)
    server_command_stop (e->kind);
  g_clear_pointer (&e->kind, g_free);
}

const struct export_ops nbd_export_ops = {
  .open = kind_open,
  .pread = kind_pread,
  .pwrite = kind_pwrite,
  .zero = kind_zero,
  .flush = kind_flush,
  .block_status = kind_block_status,
  .finish = kind_finish,
  .close = kind_close,
};
