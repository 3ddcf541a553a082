/*
 * tproc_dir.h: what a test reads of a directory it does not own: the
 * entries of a process's /proc/PID/fd, of a repository's objects/.
 */
#ifndef GRASPD_TPROC_DIR_H
#define GRASPD_TPROC_DIR_H

/*
 * The number of entries of dir whose names start with prefix, or, when
 * prefix is NULL, that do not start with '.'.  -1 if dir cannot be read.
 */
int tproc_dir_count(const char *dir, const char *prefix);

#endif
