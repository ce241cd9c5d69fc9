/* ferry: --streams, the report and the grant between a local half and
 * the copy's controller, packed and unpacked (range-messages.h). */
#include "range-messages.h"

#include <string.h>

/* A field at a time, little-endian: the struct's own layout (its tail
 * padding) never reaches the socket. */
static uint8_t *
put64 (uint8_t *p, uint64_t v)
{
  v = GUINT64_TO_LE (v);
  memcpy (p, &v, sizeof v);
  return p + sizeof v;
}

static uint8_t *
put32 (uint8_t *p, uint32_t v)
{
  v = GUINT32_TO_LE (v);
  memcpy (p, &v, sizeof v);
  return p + sizeof v;
}

static const uint8_t *
get64 (const uint8_t *p, uint64_t *v)
{
  memcpy (v, p, sizeof *v);
  *v = GUINT64_FROM_LE (*v);
  return p + sizeof *v;
}

static const uint8_t *
get32 (const uint8_t *p, uint32_t *v)
{
  memcpy (v, p, sizeof *v);
  *v = GUINT32_FROM_LE (*v);
  return p + sizeof *v;
}

void
nbd_range_report_encode (const struct nbd_range_report *report,
                         uint8_t out[NBD_RANGE_REPORT_SIZE])
{
  uint8_t *p = out;

  p = put64 (p, report->size);
  p = put64 (p, (uint64_t) report->index);
  p = put64 (p, report->data_bytes);
  p = put64 (p, report->same_bytes);
  put32 (p, report->n_blocks);
}

bool
nbd_range_report_decode (const uint8_t *packet, size_t len, struct nbd_range_report *report)
{
  const uint8_t *p = packet;
  uint64_t index;

  if (len < NBD_RANGE_REPORT_SIZE)
    return false;
  p = get64 (p, &report->size);
  p = get64 (p, &index);
  p = get64 (p, &report->data_bytes);
  p = get64 (p, &report->same_bytes);
  get32 (p, &report->n_blocks);
  report->index = (int64_t) index;
  return true;
}

void
nbd_range_grant_encode (const struct nbd_range_grant *grant, uint8_t out[NBD_RANGE_GRANT_SIZE])
{
  uint8_t *p = out;

  p = put64 (p, (uint64_t) grant->index);
  p = put64 (p, grant->offset);
  put64 (p, grant->length);
}

bool
nbd_range_grant_decode (const uint8_t *packet, size_t len, struct nbd_range_grant *grant)
{
  const uint8_t *p = packet;
  uint64_t index;

  if (len != NBD_RANGE_GRANT_SIZE)
    return false;
  p = get64 (p, &index);
  p = get64 (p, &grant->offset);
  get64 (p, &grant->length);
  grant->index = (int64_t) index;
  return true;
}
