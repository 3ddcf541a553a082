/*
 * tunit_child.h: a unit test's case that runs the program again as a
 * child (selfrun.h) and expects the child to die with a given message,
 * as a process does on fatalx().
 */
#ifndef GRASPD_TUNIT_CHILD_H
#define GRASPD_TUNIT_CHILD_H

/*
 * Runs this program (named argv0) as "argv0 child <tmpdir>/child-<what>
 * what" through selfrun() and returns 0 if it exited with status 1 and
 * says in its stderr.  Otherwise prints a "# " line with the status and
 * the stderr and returns -1.  Never exits.
 */
int tunit_child_dies(const char *argv0, const char *tmpdir, const char *what,
    const char *says);

#endif
