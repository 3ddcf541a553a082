/*
 * selfrun.h: a unit test running itself again as a child process, for
 * cases whose outcome is the process ending (fatalx() on a bad message).
 */
#ifndef GRASPD_SELFRUN_H
#define GRASPD_SELFRUN_H

#include <stddef.h>

/*
 * Creates the directory dir, then runs this program (/proc/self/exe) as
 * "argv0 child dir what" and waits for it, its stderr read into out
 * (outlen bytes, NUL-terminated; the rest is dropped).  Returns its exit
 * status, or -1 if it could not run or a signal ended it.
 */
int selfrun(const char *argv0, const char *dir, const char *what, char *out,
    size_t outlen);

#endif
