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

static sqlite3_vfs		pc_vfs;
static sqlite3_vfs	       *pc_real;
static const sqlite3_io_methods pc_methods;
static pthread_mutex_t		pc_mu = PTHREAD_MUTEX_INITIALIZER;
static int			pc_fd = -1;
static uint32_t			pc_nfiles;
static long long		pc_ops, pc_cut_at;

static sqlite3_file *
real(sqlite3_file *f)
{
	return (sqlite3_file *)((struct pc_file *)f + 1);
}

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
pc_close(sqlite3_file *f)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xClose(r);
}

static int
pc_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xRead(r, p, n, off);
}

static int
pc_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	struct pc_file *pf = (struct pc_file *)f;
	sqlite3_file   *r = real(f);
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
	sqlite3_file   *r = real(f);
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
pc_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xFileSize(r, size);
}

static int
pc_lock(sqlite3_file *f, int lock)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xLock(r, lock);
}

static int
pc_unlock(sqlite3_file *f, int lock)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xUnlock(r, lock);
}

static int
pc_check_reserved_lock(sqlite3_file *f, int *out)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xCheckReservedLock(r, out);
}

static int
pc_file_control(sqlite3_file *f, int op, void *arg)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xFileControl(r, op, arg);
}

static int
pc_sector_size(sqlite3_file *f)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xSectorSize(r);
}

static int
pc_device_characteristics(sqlite3_file *f)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xDeviceCharacteristics(r);
}

static int
pc_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xShmMap(r, pg, pgsz, extend, pp);
}

static int
pc_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xShmLock(r, offset, n, flags);
}

static void
pc_shm_barrier(sqlite3_file *f)
{
	sqlite3_file *r = real(f);

	r->pMethods->xShmBarrier(r);
}

static int
pc_shm_unmap(sqlite3_file *f, int del)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xShmUnmap(r, del);
}

static int
pc_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xFetch(r, off, n, pp);
}

static int
pc_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = real(f);

	return r->pMethods->xUnfetch(r, off, p);
}

static const sqlite3_io_methods pc_methods = {
	3,
	pc_close,
	pc_read,
	pc_write,
	pc_truncate,
	pc_sync,
	pc_file_size,
	pc_lock,
	pc_unlock,
	pc_check_reserved_lock,
	pc_file_control,
	pc_sector_size,
	pc_device_characteristics,
	pc_shm_map,
	pc_shm_lock,
	pc_shm_barrier,
	pc_shm_unmap,
	pc_fetch,
	pc_unfetch,
};

static int
pc_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
    int *out_flags)
{
	struct pc_file *pf = (struct pc_file *)f;
	sqlite3_file   *r = real(f);
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
	pf->pf_base.pMethods = &pc_methods;
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
	pc_vfs.xDelete = pc_delete;
	if (sqlite3_vfs_register(&pc_vfs, 1) != SQLITE_OK)
		fatalx("powercut: cannot register the VFS");
	log_warnx("power-cut test: recording the database's writes in %s%s",
	    path, pc_cut_at > 0 ? ", cut planned" : "");
}
