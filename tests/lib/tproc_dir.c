/*
 * tproc_dir.c: counting a directory's entries for the tests (see
 * tproc_dir.h).
 */
#include <dirent.h>
#include <string.h>

#include "tproc_dir.h"

int
tproc_dir_count(const char *dir, const char *prefix)
{
	DIR	      *d;
	struct dirent *e;
	int	       n = 0;

	if ((d = opendir(dir)) == NULL)
		return -1;
	while ((e = readdir(d)) != NULL)
		n += prefix == NULL ?
		    e->d_name[0] != '.' :
		    strncmp(e->d_name, prefix, strlen(prefix)) == 0;
	closedir(d);
	return n;
}
