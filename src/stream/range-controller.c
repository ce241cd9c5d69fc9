/* ferry: --streams, the remote copy's controller (range-controller.h). */
#include <config.h>

#include "range-controller.h"

#include <inttypes.h>

#include "error.h"

struct range_controller {
  unsigned streams;           /* the channels: the schedule's divisor */
  bool size_known;            /* the first report came */
  uint64_t size, n_ranges;    /* the image's, as the first report said */
  uint64_t next_range;        /* the next one to hand out */
  uint64_t next_offset;       /* and where it starts */
  uint64_t composed;          /* ranges folded into @image, in order */
  uint64_t composed_end;      /* the offset where they end */
  GHashTable *ahead;          /* index -> GBytes: block digests of ranges done
                                 beyond @composed (MAX_RANGES_AHEAD) */
  GChecksum *image;           /* SHA-256 over the block digests */
  struct range_counts done;   /* the ranges reported done */
  bool stopping;              /* a stop signal: no more ranges */
  bool over;                  /* the copy failed: no more ranges or reports */
  GError *error;              /* its first failure, unless its caller
                                 reports that itself */
};

struct range_controller *
range_controller_new (unsigned streams)
{
  struct range_controller *ctl = g_new0 (struct range_controller, 1);

  ctl->streams = streams;
  ctl->ahead = g_hash_table_new_full (NULL, NULL, NULL, (GDestroyNotify) g_bytes_unref);
  ctl->image = g_checksum_new (G_CHECKSUM_SHA256);
  return ctl;
}

void
range_controller_free (struct range_controller *ctl)
{
  g_hash_table_unref (ctl->ahead);
  g_checksum_free (ctl->image);
  g_clear_error (&ctl->error);
  g_free (ctl);
}

enum range_next
range_controller_next (struct range_controller *ctl, struct range_holder *holder,
                       struct nbd_range_grant *grant)
{
  *grant = (struct nbd_range_grant) { NBD_RANGE_NONE_LEFT, 0, 0 };
  holder->waiting = false;
  if (ctl->over) {
    grant->index = NBD_RANGE_COPY_OVER;
    return RANGE_COPY_OVER;
  }
  if (ctl->stopping || ctl->next_range == ctl->n_ranges)
    return RANGE_NONE_LEFT;
  if (ctl->next_range - ctl->composed >= MAX_RANGES_AHEAD) {
    holder->waiting = true;
    return RANGE_WAIT;
  }
  grant->index = ctl->next_range++;
  grant->offset = ctl->next_offset;
  grant->length = nbd_range_length (ctl->size - grant->offset, ctl->streams);
  ctl->next_offset += grant->length;
  holder->range = (struct nbd_range) { grant->index, grant->offset, grant->length };
  return RANGE_GRANT;
}

/* The first report sets the image's size, and so its ranges; every other
 * one must say the same. */
static bool
check_size (struct range_controller *ctl, uint64_t size, GError **error)
{
  if (ctl->size_known && size != ctl->size)
    return ferry_set_error (error, FERRY_EXIT_STREAM, "the image is %" PRIu64 " bytes, where "
                            "another stream found %" PRIu64, size, ctl->size);
  if (!ctl->size_known) {
    ctl->size_known = true;
    ctl->size = size;
    for (uint64_t offset = 0; offset < size; ctl->n_ranges++)
      offset += nbd_range_length (size - offset, ctl->streams);
  }
  return true;
}

/* Whether @report is for the range @holder holds, with a digest a block
 * and no more bytes than it has. */
static bool
holds (const struct range_holder *holder, const struct nbd_range_report *report)
{
  const struct nbd_range *r = &holder->range;

  return report->index == r->index && report->n_blocks == nbd_range_blocks (r, STREAM_BLOCK_SIZE) &&
         report->data_bytes <= r->length && report->same_bytes <= r->length - report->data_bytes;
}

static void
count (struct range_counts *counts, uint64_t length, const struct nbd_range_report *report)
{
  counts->ranges++;
  counts->bytes += length;
  counts->data_bytes += report->data_bytes;
  counts->same_bytes += report->same_bytes;
}

/* Fold the ranges held ahead that now follow the composed ones. */
static void
compose (struct range_controller *ctl)
{
  GBytes *digests;

  while ((digests = g_hash_table_lookup (ctl->ahead, GSIZE_TO_POINTER (ctl->composed)))) {
    gsize len;
    const guint8 *d = g_bytes_get_data (digests, &len);
    g_checksum_update (ctl->image, d, len);
    g_hash_table_remove (ctl->ahead, GSIZE_TO_POINTER (ctl->composed));
    ctl->composed++;
    ctl->composed_end += nbd_range_length (ctl->size - ctl->composed_end, ctl->streams);
  }
}

bool
range_controller_take_report (struct range_controller *ctl, struct range_holder *holder,
                              const uint8_t *packet, size_t len, GError **error)
{
  struct nbd_range_report report;

  if (ctl->over)
    return true;
  if (!nbd_range_report_decode (packet, len, &report))
    return ferry_set_error (error, FERRY_EXIT_STREAM, "a short report (%zu bytes)", len);
  if (len != NBD_RANGE_REPORT_SIZE + (size_t) report.n_blocks * STREAM_DIGEST_SIZE)
    return ferry_set_error (error, FERRY_EXIT_STREAM, "a report of %zu bytes for %" PRIu32
                            " digests", len, report.n_blocks);
  if (!check_size (ctl, report.size, error))
    return false;
  /* -1: a first request, with no range done. */
  if (report.index < 0)
    return true;
  if (!holds (holder, &report))
    return ferry_set_error (error, FERRY_EXIT_STREAM, "a report for range %" PRId64 ", which "
                            "it did not hold", report.index);
  count (&holder->done, holder->range.length, &report);
  count (&ctl->done, holder->range.length, &report);
  holder->range.index = -1;
  g_hash_table_insert (ctl->ahead, GSIZE_TO_POINTER (report.index),
                       g_bytes_new (packet + NBD_RANGE_REPORT_SIZE, len - NBD_RANGE_REPORT_SIZE));
  compose (ctl);
  return true;
}

void
range_controller_fail (struct range_controller *ctl, GError *error)
{
  if (ctl->over) {
    g_clear_error (&error);
    return;
  }
  ctl->over = true;
  ctl->error = error;
}

const GError *
range_controller_error (const struct range_controller *ctl)
{
  return ctl->error;
}

void
range_controller_stop (struct range_controller *ctl)
{
  ctl->stopping = true;
}

bool
range_holder_check_ended (const struct range_holder *holder, GError **error)
{
  if (holder->range.index < 0)
    return true;
  return ferry_set_error (error, FERRY_EXIT_STREAM, "it ended without finishing "
                          NBD_RANGE_FMT, NBD_RANGE_ARGS (&holder->range));
}

static bool
complete (const struct range_controller *ctl)
{
  return ctl->size_known && ctl->composed == ctl->n_ranges;
}

bool
range_controller_check_complete (const struct range_controller *ctl, GError **error)
{
  if (complete (ctl))
    return true;
  /* The ranges done are the composed ones and those held ahead; the first
   * missing one is the next to compose. */
  return ferry_set_error (error, FERRY_EXIT_STREAM, "the streams ended with %" PRIu64 " of %"
                          PRIu64 " ranges copied (the one at offset %" PRIu64 " was not)",
                          ctl->composed + g_hash_table_size (ctl->ahead), ctl->n_ranges,
                          ctl->composed_end);
}

char *
range_controller_digest (const struct range_controller *ctl)
{
  g_autoptr (GChecksum) image = NULL;
  uint8_t le[8];

  if (!complete (ctl))
    return NULL;
  /* A copy: the sum so far stays open. */
  image = g_checksum_copy (ctl->image);
  for (int i = 0; i < 8; i++)
    le[i] = ctl->size >> (8 * i);
  g_checksum_update (image, le, sizeof le);
  return g_strdup (g_checksum_get_string (image));
}

uint64_t
range_controller_size (const struct range_controller *ctl)
{
  return ctl->size;
}

uint64_t
range_controller_n_ranges (const struct range_controller *ctl)
{
  return ctl->n_ranges;
}

const struct range_counts *
range_controller_done (const struct range_controller *ctl)
{
  return &ctl->done;
}
