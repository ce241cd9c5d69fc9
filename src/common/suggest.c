/* ferry: the did-you-mean of a usage error. */
#include <config.h>

#include "suggest.h"

#include <string.h>

#include <glib.h>

/* Longer words are never near anything. */
#define SUGGEST_MAX 64

/* Levenshtein's distance with swaps of neighbours counted as one edit
 * (optimal string alignment), ignoring case: "tpc" is one edit from "tcp". */
static size_t
distance (const char *a, const char *b)
{
  size_t la = strlen (a), lb = strlen (b);
  size_t d[SUGGEST_MAX + 1][SUGGEST_MAX + 1];

  if (la > SUGGEST_MAX || lb > SUGGEST_MAX)
    return G_MAXSIZE;
  for (size_t i = 0; i <= la; i++)
    d[i][0] = i;
  for (size_t j = 0; j <= lb; j++)
    d[0][j] = j;
  for (size_t i = 1; i <= la; i++)
    for (size_t j = 1; j <= lb; j++) {
      char x = g_ascii_tolower (a[i - 1]), y = g_ascii_tolower (b[j - 1]);
      d[i][j] = MIN (MIN (d[i - 1][j], d[i][j - 1]) + 1, d[i - 1][j - 1] + (x != y));
      if (i > 1 && j > 1 && x == g_ascii_tolower (b[j - 2]) &&
          g_ascii_tolower (a[i - 2]) == y)
        d[i][j] = MIN (d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[la][lb];
}

const char *
ferry_suggest (const char *word, const char *const *candidates, size_t n)
{
  size_t best_distance = strlen (word) >= 5 ? 3 : 2;
  const char *best = NULL;

  for (size_t i = 0; i < n; i++) {
    size_t d = distance (word, candidates[i]);
    if (d < best_distance) {
      best = candidates[i];
      best_distance = d;
    }
  }
  return best;
}
