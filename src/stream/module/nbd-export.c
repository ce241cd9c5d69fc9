/* ferry: open an NBD export for stream mode: a URI (anything
 * nbd_connect_uri takes) or nbdcopy's '[ CMD ARGS... ]' (a server started
 * with systemd socket activation); more connections when the server
 * advertises multi-conn. */
#include <config.h>

#include "nbd-export.h"

#include <errno.h>
#include <inttypes.h>

#include "error.h"
#include "gsource-release.h"
#include "nbd-aio-source.h"
#include "nbd-stream-format.h"
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
      (options->command ? nbd_connect_systemd_socket_activation (nbd, options->command)
                        : nbd_connect_uri (nbd, uri)) == -1) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_CONNECT, "cannot connect to %s: %s",
                 e->name, nbd_get_error () ? nbd_get_error () : g_strerror (errno));
    if (nbd)
      nbd_close (nbd);
    return NULL;
  }
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

/* The request size: the option's or the default, within the server's
 * preferred and maximum sizes and libnbd's 64 MiB, in whole blocks. */
static bool
choose_request_size (struct nbd_export *e, struct nbd_handle *nbd, uint64_t wanted,
                     GError **error)
{
  int64_t preferred = nbd_get_block_size (nbd, LIBNBD_SIZE_PREFERRED);
  int64_t maximum = nbd_get_block_size (nbd, LIBNBD_SIZE_MAXIMUM);
  uint64_t size = wanted;

  if (preferred > 0 && (uint64_t) preferred > size)
    size = preferred;
  if (maximum > 0 && (uint64_t) maximum < size)
    size = maximum;
  if (size > STREAM_MAX_DATA)
    size = STREAM_MAX_DATA;
  size -= size % STREAM_BLOCK_SIZE;
  if (size == 0) {
    g_set_error (error, FERRY_ERROR, FERRY_EXIT_NBD,
                 "%s: the server's maximum request of %" PRId64 " bytes is below "
                 "the stream's %u-byte block", e->name, maximum, STREAM_BLOCK_SIZE);
    return false;
  }
  e->request_size = size;
  return true;
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
  /* --delta: DEST's digests skip its holes too (nbd-block-digests.c). */
  e->has_map = (!writing || options->delta) && !options->no_extents &&
               nbd_can_meta_context (nbd, LIBNBD_CONTEXT_BASE_ALLOCATION) == 1;
  if (!choose_request_size (e, nbd, options->request_size, error))
    return false;
  /* A command's server is a child of this one connection. */
  if (options->command || nbd_can_multi_conn (nbd) != 1)
    want = 1;
  while (e->n_conns < want) {
    nbd = connect_one (e, options, uri, writing, error);
    if (nbd == NULL)
      return false;
    attach (e, nbd);
  }
  return true;
}

bool
nbd_export_open (struct nbd_export *e, const struct nbd_stream_options *options,
                 const char *uri, bool writing, GError **error)
{
  g_autofree char *connecting = NULL;
  bool ok;

  e->name = options->image_name ? options->image_name
           : options->command ? options->command[0] : uri;
  /* libnbd's connect retries its poll on EINTR: a server that never
   * answers would make SIGTERM wait for ever.  Nothing is written yet. */
  connecting = g_strdup_printf (" while connecting to %s\n", e->name);
  signal_watch_exit_on_stop (connecting);
  ok = open_export (e, options, uri, writing, error);
  signal_watch_exit_on_stop (NULL);
  return ok;
}

struct nbd_conn *
nbd_export_pick (struct nbd_export *e)
{
  struct nbd_conn *best = &e->conn[0];

  for (unsigned i = 1; i < e->n_conns; i++)
    if (e->conn[i].in_flight < best->in_flight)
      best = &e->conn[i];
  return best;
}

bool
nbd_export_pread (struct nbd_export *e, uint8_t *buf, uint64_t length, uint64_t offset,
                  struct nbd_conn **conn, nbd_completion_callback done, int *error)
{
  struct nbd_conn *c = nbd_export_pick (e);

  *conn = c;
  c->in_flight++;
  if (nbd_aio_pread (c->nbd, buf, length, offset, done, 0) == -1) {
    *error = nbd_get_errno () ? nbd_get_errno () : EIO;
    c->in_flight--;
    *conn = NULL;
    return false;
  }
  return true;
}

int
nbd_command_done (void *data, int *error)
{
  struct nbd_command *c = data;

  c->done = true;
  c->error = *error;
  c->conn->in_flight--;
  __atomic_store_n (c->kicked, true, __ATOMIC_RELEASE);
  return 1;
}

unsigned
nbd_export_in_flight (const struct nbd_export *e)
{
  unsigned n = 0;

  for (unsigned i = 0; i < e->n_conns; i++)
    n += e->conn[i].in_flight;
  return n;
}

void
nbd_export_finish (struct nbd_export *e)
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

void
nbd_export_close (struct nbd_export *e)
{
  for (unsigned i = 0; i < e->n_conns; i++) {
    gsource_release (e->conn[i].source);
    nbd_close (e->conn[i].nbd);
  }
  e->n_conns = 0;
  g_clear_error (&e->lost);
}
