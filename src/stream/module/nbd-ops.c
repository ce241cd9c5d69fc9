/* ferry: the NBD kind of export (export-ops.h): a URI (anything
 * nbd_connect_uri takes), nbdcopy's '[ CMD ARGS... ]' (a server started
 * with systemd socket activation) or an image path's qemu-nbd
 * (image-server.h), on libnbd's AIO API and the glib main loop; more
 * connections when the server advertises multi-conn. */
#include <config.h>

#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "error.h"
#include "export-ops.h"
#include "gsource-release.h"
#include "image-server.h"
#include "nbd-aio-source.h"
#include "nbd-export.h"
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

/* libnbd (1.14) keeps the socket it bound for a command's server, in a
 * directory of its own under /tmp, until nbd_close: a ferry killed before
 * then would leave both behind.  Once connected, the server has the one
 * connection it will get, so both go now; nbd_close then finds nothing to
 * remove.  The path is the peer's address: the socket the server listens
 * on. */
static void
remove_activation_socket (struct nbd_handle *nbd)
{
  struct sockaddr_un addr = { 0 };
  socklen_t len = sizeof addr - 1;      /* a NUL stays at the end */
  int fd = nbd_aio_get_fd (nbd);
  g_autofree char *dir = NULL;

  if (fd < 0 || getpeername (fd, (struct sockaddr *) &addr, &len) == -1 ||
      addr.sun_family != AF_UNIX || len <= offsetof (struct sockaddr_un, sun_path))
    return;
  dir = g_path_get_dirname (addr.sun_path);
  if (g_str_has_prefix (dir, "/tmp/libnbd") && unlink (addr.sun_path) == 0)
    rmdir (dir);
}

/* An image's qemu-nbd (image-server.h) on @nbd: -1 if it did not serve,
 * with *@error in its own words when it said why. */
static int
connect_image_server (struct nbd_export *e, struct nbd_handle *nbd,
                      const struct nbd_stream_options *options, GError **error)
{
  struct image_server *server = g_new (struct image_server, 1);
  int fd = image_server_start (server, options->command, e->name, error);
  g_autofree char *reason = NULL;

  e->kind = server;
  if (fd < 0)
    return -1;
  if (nbd_connect_socket (nbd, fd) == 0) {
    image_server_serving (server);
    return 0;
  }
  if ((reason = image_server_reason (server)))
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot open %s: %s", e->name, reason);
  return -1;
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
       nbd_add_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) == -1) ||
      (options->image_server ? connect_image_server (e, nbd, options, error)
       : strcmp (uri, "[") == 0 ? nbd_connect_systemd_socket_activation (nbd, options->command)
       : nbd_connect_uri (nbd, uri)) == -1) {
    if (*error == NULL)
      g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot connect to %s: %s",
                   e->name, nbd_get_error () ? nbd_get_error () : g_strerror (errno));
    if (nbd)
      nbd_close (nbd);
    return NULL;
  }
  if (strcmp (uri, "[") == 0 && !options->image_server)
    remove_activation_socket (nbd);
  return nbd;
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
    image_server_stop (e->kind);
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
