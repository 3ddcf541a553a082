/*
 * tunit_strv.c: comparing arrays of strings in the unit tests
 * (tunit_strv.h).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tunit_strv.h"

int
tunit_strv_same(char *const *a, size_t na, char *const *b, size_t nb)
{
	size_t i;

	if (na != nb) {
		printf("# %zu strings, expected %zu\n", na, nb);
		return 0;
	}
	for (i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0) {
			printf("# %s\n# %s\n", a[i], b[i]);
			return 0;
		}
	return 1;
}
