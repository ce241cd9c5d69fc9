/* ferry: --progress for transfers of a known size: one refreshing line on
 * a terminal stderr (percent, MiB/s, ETA, data vs zero bytes), or
 * nbdcopy-compatible "N/100" lines on an fd for programs (fd:N). */
#ifndef FERRY_TRANSFER_PROGRESS_H
#define FERRY_TRANSFER_PROGRESS_H

#include <stdbool.h>
#include <stdint.h>

struct transfer_progress {
  int fd;                     /* where lines go; -1: off */
  bool terminal;              /* a refreshing line (else N/100 lines) */
  uint64_t total;             /* bytes at 100% */
  int64_t start_us, last_us;  /* monotonic: start, last line drawn */
  int last_percent;           /* fd:N: the last N written */
};

/* @spec: NULL (off), "" (stderr, if it is a terminal) or "fd:N".  False
 * if @spec is none of those. */
bool transfer_progress_parse (const char *spec);
void transfer_progress_init (struct transfer_progress *p, const char *spec, uint64_t total);
/* Cheap to call often: draws at most 10 times a second, and once with
 * @final (100% on success). */
void transfer_progress_update (struct transfer_progress *p, uint64_t done,
                               uint64_t data, uint64_t zero, bool final);

#endif
