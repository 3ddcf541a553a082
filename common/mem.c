/*
 * mem.c: allocation helpers every process uses (see mem.h).
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "mem.h"

void *
xmalloc(size_t n)
{
	void *p;

	if ((p = malloc(n ? n : 1)) == NULL)
		fatal("malloc");
	return p;
}

void *
xcalloc(size_t n, size_t size)
{
	void *p;

	if ((p = calloc(n ? n : 1, size ? size : 1)) == NULL)
		fatal("calloc");
	return p;
}

void *
xreallocarray(void *p, size_t n, size_t size)
{
	if (size && n > SIZE_MAX / size)
		fatalx("reallocarray: %zu * %zu bytes overflow", n, size);
	if ((p = realloc(p, n * size > 0 ? n * size : 1)) == NULL)
		fatal("realloc");
	return p;
}

char *
xstrdup(const char *s)
{
	char *p;

	if ((p = strdup(s)) == NULL)
		fatal("strdup");
	return p;
}

char *
xstrndup(const char *s, size_t n)
{
	char *p;

	if ((p = strndup(s, n)) == NULL)
		fatal("strndup");
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
