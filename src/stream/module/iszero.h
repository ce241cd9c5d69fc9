/* ferry: the zero test of every block the sender reads, the raw receiver
 * gets and the block digests look at.  Header-only, so that the stream
 * module and the unit test (tests/iszero-test.c) share it. */
#ifndef FERRY_ISZERO_H
#define FERRY_ISZERO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

/* True if all @len bytes at @buf are 0 (a NUL block with a non-zero last
 * byte is data).  The first 16 bytes one by one, then the whole against
 * itself shifted by 16: memcmp runs at memory speed, a loop would not. */
static inline bool
is_zero (const uint8_t *buf, size_t len)
{
  size_t head = len < 16 ? len : 16;

  for (size_t i = 0; i < head; i++)
    if (buf[i])
      return false;
  return len <= 16 || memcmp (buf, buf + 16, len - 16) == 0;
}

#endif
