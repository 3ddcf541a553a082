/*
 * powercut.h: a recording SQLite VFS for power-cut tests, in the spirit
 * of SQLite's own crash tests (its test6.c): every write, truncation and
 * sync that reaches the database's files is appended to a log, so that a
 * test can rebuild the files as a power cut would leave them: what was
 * written before the file's last sync is there, what came after may be
 * missing or torn (tests/lib/tpowercut.h does that).
 *
 * Test timing only: powercut_from_env() installs it when NGIT_TEST is
 * true and POWERCUT_ENV_LOG names a log file, as the default VFS, so
 * that walbuf.c's VFS (the writer's) and relayd's checkpoint connection
 * both run on it.  With POWERCUT_ENV_AT set to N, the process kills
 * itself (SIGKILL) instead of carrying out the N-th recorded operation:
 * the moment of the cut is a function of the test's seed.  The log stands
 * for the syncs: the files themselves are never synced.
 */
#ifndef GRASPD_POWERCUT_H
#define GRASPD_POWERCUT_H

#include <stdint.h>

/* Ours: the environment of a power-cut test (never read without
 * NGIT_TEST). */
#define POWERCUT_ENV_LOG "GRASPD_POWERCUT_LOG"
#define POWERCUT_ENV_AT	 "GRASPD_POWERCUT_AT"
/* The name of the VFS once installed. */
#define POWERCUT_VFS	 "graspd-powercut"

/* Record types of the log. */
enum powercut_op {
	PC_OPEN = 1, /* a file opened: its number, name, size at open */
	PC_WRITE,    /* len bytes written at off */
	PC_TRUNC,    /* the file truncated to off bytes */
	PC_SYNC,     /* the file's data is on stable storage */
	PC_DELETE,   /* the file named was removed */
	PC_CUT,	     /* the power went: nothing follows */
};

/*
 * One record of the log, in the host's byte order, followed by pr_len
 * bytes: a PC_WRITE's data, a PC_OPEN's or PC_DELETE's name (without a
 * NUL).  pr_file numbers an open file (from its PC_OPEN); pr_off is a
 * PC_WRITE's offset, a PC_TRUNC's size, a PC_OPEN's size at open.
 */
struct powercut_rec {
	uint32_t pr_op;
	uint32_t pr_file;
	int64_t	 pr_off;
	uint32_t pr_len;
	uint32_t pr_pad;
};

/*
 * Installs the recording VFS as SQLite's default when NGIT_TEST is true
 * and POWERCUT_ENV_LOG is set (once; later calls do nothing).  Must run
 * before the first connection is opened and before walbuf_register().
 * Exits (fatal) when the log cannot be created: a test asked for it.
 */
void powercut_from_env(void);

#endif
