/* ferry: the did-you-mean of a usage error. */
#ifndef FERRY_SUGGEST_H
#define FERRY_SUGGEST_H

#include <stddef.h>

/* The one of @n @candidates nearest to @word, ignoring case, if it is
 * near enough to be what was meant (one edit, or two in a word of five
 * or more: a letter added, dropped, changed, or two swapped); NULL if
 * none is. */
const char *ferry_suggest (const char *word, const char *const *candidates, size_t n);

#endif
