/* ferry: --streams, the report and the grant between a local half and
 * the copy's controller, packed and unpacked (range-messages.h). */
#include "range-messages.h"

#include <string.h>

/* A field at a time, little-endian: the struct's own layout (its tail
 * padding) never reaches the socket.  @n 64-bit fields from @p. */
static uint8_t *
put64s (uint8_t *p, const uint64_t *v, size_t n)
{
  for (size_t i = 0; i < n; i++, p += 8) {
    uint64_t le = GUINT64_TO_LE (v[i]);
    memcpy (p, &le, 8);
  }
  return p;
}

static const uint8_t *
get64s (const uint8_t *p, uint64_t *v, size_t n)
{
  for (size_t i = 0; i < n; i++, p += 8) {
    memcpy (&v[i], p, 8);
    v[i] = GUINT64_FROM_LE (v[i]);
  }
  return p;
}

void
nbd_range_report_encode (const struct nbd_range_report *report,
                         uint8_t out[NBD_RANGE_REPORT_SIZE])
{
  const uint64_t v[4] = { report->size, (uint64_t) report->index, report->data_bytes,
                          report->same_bytes };
  uint32_t n_blocks = GUINT32_TO_LE (report->n_blocks);

  memcpy (put64s (out, v, 4), &n_blocks, 4);
}

bool
nbd_range_report_decode (const uint8_t *packet, size_t len, struct nbd_range_report *report)
{
  uint64_t v[4];
  uint32_t n_blocks;

  if (len < NBD_RANGE_REPORT_SIZE)
    return false;
  memcpy (&n_blocks, get64s (packet, v, 4), 4);
  *report = (struct nbd_range_report) { v[0], (int64_t) v[1], v[2], v[3],
                                        GUINT32_FROM_LE (n_blocks) };
  return true;
}

void
nbd_range_grant_encode (const struct nbd_range_grant *grant, uint8_t out[NBD_RANGE_GRANT_SIZE])
{
  const uint64_t v[3] = { (uint64_t) grant->index, grant->offset, grant->length };

  put64s (out, v, 3);
}

bool
nbd_range_grant_decode (const uint8_t *packet, size_t len, struct nbd_range_grant *grant)
{
  uint64_t v[3];

  if (len != NBD_RANGE_GRANT_SIZE)
    return false;
  get64s (packet, v, 3);
  *grant = (struct nbd_range_grant) { (int64_t) v[0], v[1], v[2] };
  return true;
}
