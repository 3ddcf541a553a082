/*
 * tfix.h: set-ups that several test programs share (a relayd for all the
 * cases, ...), handed to t_main() by T_MAIN_FIXTURE() in t.h.  Apart from
 * t.h so that the library files defining them need not include t.h.
 */
#ifndef GRASPD_TFIX_H
#define GRASPD_TFIX_H

/*
 * setup(arg) runs before the first case: 0 to go on, else the program's
 * exit status (it prints a "not ok" line saying why).  cleanup(arg,
 * failed) runs after the last one; failed is 1 when a case failed.
 */
struct t_fixture {
	int (*setup)(void *arg);
	void (*cleanup)(void *arg, int failed);
};

#endif
