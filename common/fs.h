/*
 * fs.h: file-system helpers every process uses.
 */
#ifndef GRASPD_FS_H
#define GRASPD_FS_H

#include <sys/types.h>

/*
 * Creates directory path and every missing one above it, each with mode
 * (less the umask); one that exists already is fine.  Returns 0, or -1
 * with errno set (ENAMETOOLONG past PATH_MAX).  Never exits.
 */
int mkdir_p(const char *path, mode_t mode);

#endif
