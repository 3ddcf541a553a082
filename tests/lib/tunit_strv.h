/*
 * tunit_strv.h: arrays of allocated strings in the unit tests (what a
 * callback collected, say): freeing one, comparing two.
 */
#ifndef GRASPD_TUNIT_STRV_H
#define GRASPD_TUNIT_STRV_H

#include <stddef.h>

/* Frees the n strings of v and v itself; v may be NULL when n is 0. */
void	 tunit_strv_free(char **v, size_t n);
/*
 * 1 if a (na strings) and b (nb) hold the same strings in the same
 * order; otherwise 0, after a "# " comment naming the first difference.
 */
int	 tunit_strv_same(char *const *a, size_t na, char *const *b,
	    size_t nb);

#endif
