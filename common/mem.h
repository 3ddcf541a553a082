/*
 * mem.h: allocation helpers every process uses.  Allocation failure in a
 * role is fatal (the supervisor restarts it), so these never return NULL.
 */
#ifndef GRASPD_MEM_H
#define GRASPD_MEM_H

#include <stddef.h>

/*
 * malloc, calloc, reallocarray, strdup and strndup that never return
 * NULL: out of memory, they exit (fatal).  A size of 0 allocates one
 * byte, so that the result is never NULL either; xreallocarray() exits
 * when n * size overflows.  The caller frees what they return.
 */
void *xmalloc(size_t n);
void *xcalloc(size_t n, size_t size);
void *xreallocarray(void *p, size_t n, size_t size);
char *xstrdup(const char *s);
char *xstrndup(const char *s, size_t n);

/*
 * Frees the n strings of v (NULL entries are fine) and then v itself, an
 * array the caller owned with all it points to.  v may be NULL when n is
 * 0.  Never exits.
 */
void strv_free(char **v, size_t n);
/* strv_free(*vp, *np), then *vp = NULL and *np = 0.  Never exits. */
void strv_clear(char ***vp, size_t *np);
/* 1 if one of the n strings of v equals s, else 0.  Never exits. */
int  strv_has(char *const *v, size_t n, const char *s);
/*
 * Appends a copy of s to the array *vp of *np owned strings unless it is
 * there already.  Exits (fatal) when out of memory.
 */
void strv_add(char ***vp, size_t *np, const char *s);

#endif
