/* ferry: what the copy loops share over an export's connections, of any
 * kind (export-ops.h; export-open.c opens one). */
#include <config.h>

#include "nbd-export.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "nbd-stream-format.h"

bool
nbd_export_set_request_size (struct nbd_export *e, uint64_t wanted, int64_t preferred,
                             int64_t maximum, GError **error)
{
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
  if (!e->ops->pread (e, c, buf, length, offset, done, error)) {
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
  if (e->ops->finish)
    e->ops->finish (e);
}

void
nbd_export_close (struct nbd_export *e)
{
  if (e->ops)
    e->ops->close (e);
  e->n_conns = 0;
  g_clear_error (&e->lost);
  g_clear_pointer (&e->created, g_free);
}

void
nbd_export_remove_created (struct nbd_export *e)
{
  struct stat st;

  if (e->created && stat (e->created, &st) == 0 && st.st_dev == e->created_dev &&
      st.st_ino == e->created_ino && st.st_size == 0)
    unlink (e->created);
  g_clear_pointer (&e->created, g_free);
}

const char *
nbd_export_strerror (int error)
{
  if (error == ENODATA)
    return "the file ends before that: it shrank while ferry read it";
  return g_strerror (error);
}
