/*
 * tunit_strv.h: arrays of strings in the unit tests (what a callback
 * collected, say): comparing two.  common/mem.h's strv_free() frees one.
 */
#ifndef GRASPD_TUNIT_STRV_H
#define GRASPD_TUNIT_STRV_H

#include <stddef.h>

/*
 * 1 if a (na strings) and b (nb) hold the same strings in the same
 * order; otherwise 0, after a "# " comment naming the first difference.
 */
int tunit_strv_same(char *const *a, size_t na, char *const *b, size_t nb);

#endif
