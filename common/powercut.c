/*
 * powercut.c: the recording VFS of powercut.h, installed in relayd under
 * test only (db_open() asks, before any connection).  It wraps SQLite's
 * default VFS; each write, truncation, sync and removal is carried out
 * (a sync only recorded) and then appended to the log under one lock, so
 * the log's order is the order the operations happened in, across
 * relayd's loop and its checkpoint thread.
 */
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <sqlite3.h>

#include "log.h"
#include "powercut.h"
#include "vfsshim.h"

struct pc_file {
	sqlite3_file pf_base; /* our methods */
	uint32_t     pf_id;   /* 0: not recorded (no name) */
	/* The default VFS's file follows, szOsFile bytes. */
};

static sqlite3_vfs	  pc_vfs;
static sqlite3_vfs	 *pc_real;
static struct vfs_shim_io pc_io;
static pthread_mutex_t	  pc_mu = PTHREAD_MUTEX_INITIALIZER;
static int		  pc_fd = -1;
static uint32_t		  pc_nfiles;
static long long	  pc_ops, pc_cut_at;

/* Appends n bytes to the log, whole. */
static void
log_put(const void *p, size_t n)
{
	const char *s = p;
	ssize_t	    w;

	while (n > 0) {
		if ((w = write(pc_fd, s, n)) == -1) {
			if (errno == EINTR)
				continue;
			fatal("powercut: log");
		}
		s += w;
		n -= (size_t)w;
	}
}

/* Appends a record and its bytes; under pc_mu. */
static void
record(enum powercut_op op, uint32_t file, int64_t off, const void *p,
    size_t len)
{
	struct powercut_rec r;

	memset(&r, 0, sizeof(r));
	r.pr_op = (uint32_t)op;
	r.pr_file = file;
	r.pr_off = off;
	r.pr_len = (uint32_t)len;
	log_put(&r, sizeof(r));
	if (len > 0)
		log_put(p, len);
}

/*
 * Takes pc_mu for one operation; the POWERCUT_ENV_AT-th one is never
 * carried out: the process dies, as in a power cut, with every other
 * thread, and the log ends with PC_CUT.
 */
static void
op_begin(void)
{
	pthread_mutex_lock(&pc_mu);
	if (pc_cut_at > 0 && ++pc_ops >= pc_cut_at) {
		record(PC_CUT, 0, pc_ops, NULL, 0);
		kill(getpid(), SIGKILL);
		for (;;)
			pause();
	}
}

static int
pc_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	struct pc_file *pf = (struct pc_file *)f;
	/* Before pMethods is set, where vfs_shim_real() will find it. */
	sqlite3_file   *r = (sqlite3_file *)(pf + 1);
	int		rc;

	if (pf->pf_id == 0)
		return r->pMethods->xWrite(r, p, n, off);
	op_begin();
	if ((rc = r->pMethods->xWrite(r, p, n, off)) == SQLITE_OK)
		record(PC_WRITE, pf->pf_id, off, p, (size_t)n);
	pthread_mutex_unlock(&pc_mu);
	return rc;
}

static int
pc_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	struct pc_file *pf = (struct pc_file *)f;
	/* Before pMethods is set, where vfs_shim_real() will find it. */
	sqlite3_file   *r = (sqlite3_file *)(pf + 1);
	int		rc;

	if (pf->pf_id == 0)
		return r->pMethods->xTruncate(r, size);
	op_begin();
	if ((rc = r->pMethods->xTruncate(r, size)) == SQLITE_OK)
		record(PC_TRUNC, pf->pf_id, size, NULL, 0);
	pthread_mutex_unlock(&pc_mu);
	return rc;
}

/* Recorded, not carried out: the log is what a test's disk keeps. */
static int
pc_sync(sqlite3_file *f, int flags)
{
	struct pc_file *pf = (struct pc_file *)f;

	(void)flags;
	if (pf->pf_id == 0)
		return SQLITE_OK;
	op_begin();
	record(PC_SYNC, pf->pf_id, 0, NULL, 0);
	pthread_mutex_unlock(&pc_mu);
	return SQLITE_OK;
}


static int
pc_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
    int *out_flags)
{
	struct pc_file *pf = (struct pc_file *)f;
	/* Before pMethods is set, where vfs_shim_real() will find it. */
	sqlite3_file   *r = (sqlite3_file *)(pf + 1);
	sqlite3_int64	size = 0;
	int		rc;

	(void)vfs;
	memset(pf, 0, sizeof(*pf));
	if ((rc = pc_real->xOpen(pc_real, name, r, flags, out_flags)) !=
	    SQLITE_OK)
		return rc;
	if (r->pMethods == NULL)
		return rc;
	if (r->pMethods->iVersion < 3) {
		r->pMethods->xClose(r);
		return SQLITE_CANTOPEN;
	}
	pf->pf_base.pMethods = &pc_io.si_m;
	if (name == NULL)
		return rc;
	(void)r->pMethods->xFileSize(r, &size);
	pthread_mutex_lock(&pc_mu);
	pf->pf_id = ++pc_nfiles;
	record(PC_OPEN, pf->pf_id, size, name, strlen(name));
	pthread_mutex_unlock(&pc_mu);
	return rc;
}

static int
pc_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	int rc;

	(void)vfs;
	op_begin();
	if ((rc = pc_real->xDelete(pc_real, name, sync_dir)) == SQLITE_OK)
		record(PC_DELETE, 0, 0, name, strlen(name));
	pthread_mutex_unlock(&pc_mu);
	return rc;
}

/* 1 when the environment variable name holds a true boolean. */
static int
env_true(const char *name)
{
	const char *v = getenv(name);

	return v != NULL &&
	    (strcmp(v, "1") == 0 || strcasecmp(v, "true") == 0 ||
		strcasecmp(v, "yes") == 0);
}

void
powercut_from_env(void)
{
	const char *path, *at;

	if (pc_real != NULL || !env_true("NGIT_TEST") ||
	    (path = getenv(POWERCUT_ENV_LOG)) == NULL || *path == '\0')
		return;
	if ((pc_real = sqlite3_vfs_find(NULL)) == NULL || pc_real->iVersion < 2)
		fatalx("powercut: no default VFS to wrap");
	if ((pc_fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC,
		 0600)) == -1)
		fatal("powercut: %s", path);
	if ((at = getenv(POWERCUT_ENV_AT)) != NULL)
		pc_cut_at = strtoll(at, NULL, 10);
	vfs_shim_init(&pc_vfs, pc_real, POWERCUT_VFS,
	    (int)sizeof(struct pc_file) + pc_real->szOsFile);
	pc_vfs.xOpen = pc_open;
	vfs_shim_io_init(&pc_io, sizeof(struct pc_file));
	pc_io.si_m.xWrite = pc_write;
	pc_io.si_m.xTruncate = pc_truncate;
	pc_io.si_m.xSync = pc_sync;
	pc_vfs.xDelete = pc_delete;
	if (sqlite3_vfs_register(&pc_vfs, 1) != SQLITE_OK)
		fatalx("powercut: cannot register the VFS");
	log_warnx("power-cut test: recording the database's writes in %s%s",
	    path, pc_cut_at > 0 ? ", cut planned" : "");
}
