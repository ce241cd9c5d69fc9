/* ferry: the block-hash image digest (doc/nbd-stream.md, section 5). */
#include "blkhash.h"

#include <openssl/evp.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <stdlib.h>

bool
blkhash_init (struct blkhash *b, uint64_t size, uint32_t block_size)
{
  unsigned char *zeros = calloc (1, block_size);

  b->outer = EVP_MD_CTX_new ();
  b->size = size;
  b->next = 0;
  b->block_size = block_size;
  if (!zeros || !b->outer || !EVP_DigestInit_ex (b->outer, EVP_sha256 (), NULL)) {
    free (zeros);
    blkhash_clear (b);
    return false;
  }
  SHA256 (zeros, block_size, b->zero_digest);
  free (zeros);
  return true;
}

void
blkhash_data (struct blkhash *b, const uint8_t *buf, size_t len)
{
  unsigned char d[BLKHASH_SIZE];

  while (len > 0) {
    size_t n = len < b->block_size ? len : b->block_size;
    SHA256 (buf, n, d);
    EVP_DigestUpdate (b->outer, d, sizeof d);
    buf += n;
    len -= n;
    b->next += n;
  }
}

void
blkhash_zero (struct blkhash *b, uint64_t len)
{
  while (len >= b->block_size) {
    EVP_DigestUpdate (b->outer, b->zero_digest, BLKHASH_SIZE);
    len -= b->block_size;
    b->next += b->block_size;
  }
  if (len > 0) {
    /* Only the image's last block is short. */
    unsigned char *zeros = calloc (1, len);
    if (zeros)
      blkhash_data (b, zeros, len);
    free (zeros);
  }
}

void
blkhash_final (struct blkhash *b, unsigned char out[BLKHASH_SIZE])
{
  unsigned char le[8];
  unsigned len;

  for (int i = 0; i < 8; i++)
    le[i] = (b->size >> (8 * i)) & 0xFF;
  EVP_DigestUpdate (b->outer, le, sizeof le);
  EVP_DigestFinal_ex (b->outer, out, &len);
  blkhash_clear (b);
}

void
blkhash_clear (struct blkhash *b)
{
  EVP_MD_CTX_free (b->outer);
  b->outer = NULL;
}

void
blkhash_hex (const unsigned char digest[BLKHASH_SIZE], char hex[2 * BLKHASH_SIZE + 1])
{
  for (int i = 0; i < BLKHASH_SIZE; i++)
    sprintf (hex + 2 * i, "%02x", digest[i]);
}
