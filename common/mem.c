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
	char *p;

	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}

void
strv_free(char **v, size_t n)
{
	size_t i;

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

int
strv_has(char *const *v, size_t n, const char *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(v[i], s) == 0)
			return 1;
	return 0;
}

void
strv_add(char ***vp, size_t *np, const char *s)
{
	char **v;

	if (strv_has(*vp, *np, s))
		return;
	if ((v = reallocarray(*vp, *np + 1, sizeof(*v))) == NULL)
		fatal("strv_add");
	v[*np] = xstrdup(s);
	*vp = v;
	(*np)++;
}
