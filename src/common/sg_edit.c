/* sg_edit.c: the Levenshtein distance, one row of the table at a time. */
#include "common/sg_edit.h"

#include <string.h>

size_t sg_edit_distance(const char *a, const char *b) {
  enum { N = 64 };
  size_t la = strnlen(a, N - 1), lb = strnlen(b, N - 1);
  size_t row[N];
  for (size_t j = 0; j <= lb; j++)
    row[j] = j;
  for (size_t i = 1; i <= la; i++) {
    size_t diag = row[0];
    row[0] = i;
    for (size_t j = 1; j <= lb; j++) {
      size_t up = row[j];
      size_t best = diag + (a[i - 1] != b[j - 1]);
      if (up + 1 < best)
        best = up + 1;
      if (row[j - 1] + 1 < best)
        best = row[j - 1] + 1;
      row[j] = best;
      diag = up;
    }
  }
  return row[lb];
}
