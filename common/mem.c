/*
 * mem.c: allocation helpers every process uses (see mem.h).
 */
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mem.h"

char *
xstrdup(const char *s)
{
	char	*p;

	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}

void
strv_free(char **v, size_t n)
{
	size_t	i;

	for (i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

void
strv_clear(char ***vp, size_t *np)
{
	strv_free(*vp, *np);
	*vp = NULL;
	*np = 0;
}
