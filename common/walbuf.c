/*
 * walbuf.c: the write-gathering SQLite VFS of walbuf.h, used by the
 * database's one writer (relayd, through db_open()).  Every file it opens
 * is a real file of the default VFS placed right after our small header;
 * only "-wal" files buffer, and each main database file knows the WAL
 * file opened beside it, so that the barrier and lock calls SQLite makes
 * on the main file before publishing a commit empty that WAL's buffer.
 * Single-threaded like its users: relayd's connection is opened with
 * SQLITE_OPEN_NOMUTEX and used from its loop only.  The one exception is
 * walbuf_fill(), called from another thread: it meets the writer's WAL
 * writes under wb_fill_mu, and touches nothing else here.
 */
#include <sys/stat.h>
#include <sys/uio.h>

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <sqlite3.h>

#include "db.h"
#include "log.h"
#include "vfsshim.h"
#include "walbuf.h"

/* SQLite's WAL format (its wal.c): the offset in a frame header
 * (DB_WAL_FRAME_HDR) of its "database size after commit" field, non-zero
 * on commit frames. */
#define WAL_FRAME_NTRUNCATE 4
/* The default Unix VFS writes at most 0x1ffff bytes a call (its
 * seekAndWriteFd()); ours go out in whole pages below that. */
#define WALBUF_CHUNK	    (31 * 4096)

struct wb_file {
	sqlite3_file	wf_base; /* our methods */
	struct wb_file *wf_main; /* a WAL's main file, or NULL */
	struct wb_file *wf_wal;	 /* a main file's open WAL */
	int		wf_is_wal;
	int		wf_commit; /* a commit frame's page is next */
	char	       *wf_buf;	   /* a WAL's pending frames */
	size_t		wf_len, wf_cap;
	sqlite3_int64	wf_off;	 /* file offset of wf_buf[0] */
	const char     *wf_name; /* SQLite's, valid while open */
	struct wb_file *wf_next; /* open main files */
	/* The default VFS's file follows, szOsFile bytes. */
};

static sqlite3_vfs	  wb_vfs;
static sqlite3_vfs	 *wb_real;
static struct vfs_shim_io wb_io;
static struct wb_file	 *wb_mains; /* open main database files */
static unsigned long long wb_writes;
/*
 * walbuf_fill()'s zeros and the writer's WAL writes meet here: the range
 * a fill is writing, the writer's write under way, and whether a fill
 * waits for that write.  Each waits only for an overlap.
 */
static pthread_mutex_t	  wb_fill_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t	  wb_fill_cond = PTHREAD_COND_INITIALIZER;
static sqlite3_int64	  wb_fill_from, wb_fill_to; /* [from, to) */
static sqlite3_int64	  wb_write_to;		    /* end of the write, or 0 */
static int		  wb_fill_waits;

unsigned long long
walbuf_writes(void)
{
	return wb_writes;
}

/*
 * Writes n bytes at off into a WAL file, once no fill covers any of them
 * (walbuf_fill()).
 */
static int
wal_write(sqlite3_file *r, const void *p, int n, sqlite3_int64 off)
{
	int rc;

	pthread_mutex_lock(&wb_fill_mu);
	while (off < wb_fill_to && off + n > wb_fill_from)
		pthread_cond_wait(&wb_fill_cond, &wb_fill_mu);
	wb_write_to = off + n;
	pthread_mutex_unlock(&wb_fill_mu);
	wb_writes++;
	rc = r->pMethods->xWrite(r, p, n, off);
	pthread_mutex_lock(&wb_fill_mu);
	wb_write_to = 0;
	if (wb_fill_waits)
		pthread_cond_broadcast(&wb_fill_cond);
	pthread_mutex_unlock(&wb_fill_mu);
	return rc;
}

/* Hands a WAL's pending frames to the file system. */
static int
wb_flush(struct wb_file *w)
{
	sqlite3_file *r;
	size_t	      done, n;
	int	      rc = SQLITE_OK;

	if (w == NULL || w->wf_len == 0)
		return SQLITE_OK;
	r = vfs_shim_real(&w->wf_base);
	for (done = 0; done < w->wf_len; done += n) {
		n = w->wf_len - done;
		if (n > WALBUF_CHUNK)
			n = WALBUF_CHUNK;
		if ((rc = wal_write(r, w->wf_buf + done, (int)n,
			 w->wf_off + (sqlite3_int64)done)) != SQLITE_OK)
			break;
	}
	w->wf_len = 0;
	return rc;
}

long long
walbuf_fill(int fd, long long to)
{
	static const char zeros[64 * 1024];
	struct iovec	  iov[WALBUF_FILL_CHUNK / sizeof(zeros)];
	struct stat	  st;
	long long	  from, end;
	size_t		  i, left;
	ssize_t		  n;
	int		  err = 0;

	for (i = 0; i < sizeof(iov) / sizeof(iov[0]); i++) {
		iov[i].iov_base = (void *)zeros;
		iov[i].iov_len = sizeof(zeros);
	}
	pthread_mutex_lock(&wb_fill_mu);
	for (;;) {
		err = 0;
		/* A write past the end goes first: the fill starts after it. */
		while (fstat(fd, &st) == 0 && wb_write_to > st.st_size) {
			wb_fill_waits++;
			pthread_cond_wait(&wb_fill_cond, &wb_fill_mu);
			wb_fill_waits--;
		}
		if (fstat(fd, &st) == -1) {
			err = errno;
			break;
		}
		if ((from = st.st_size) >= to)
			break;
		end = to - from > WALBUF_FILL_CHUNK ? from + WALBUF_FILL_CHUNK :
						      to;
		wb_fill_from = from;
		wb_fill_to = end;
		pthread_mutex_unlock(&wb_fill_mu);
		left = (size_t)(end - from);
		i = (left + sizeof(zeros) - 1) / sizeof(zeros);
		iov[i - 1].iov_len = left - sizeof(zeros) * (i - 1);
		n = pwritev(fd, iov, (int)i, from);
		err = n == -1 ? errno : n == 0 ? EIO : 0;
		iov[i - 1].iov_len = sizeof(zeros);
		pthread_mutex_lock(&wb_fill_mu);
		wb_fill_from = wb_fill_to = 0;
		pthread_cond_broadcast(&wb_fill_cond);
		if (err != 0 && err != EINTR)
			break;
	}
	pthread_mutex_unlock(&wb_fill_mu);
	if (err != 0) {
		errno = err;
		return -1;
	}
	return (long long)st.st_size;
}

void
walbuf_trim(void)
{
	struct wb_file *m, *w;

	for (m = wb_mains; m != NULL; m = m->wf_next) {
		if ((w = m->wf_wal) == NULL || w->wf_len != 0)
			continue;
		free(w->wf_buf);
		w->wf_buf = NULL;
		w->wf_cap = 0;
	}
}

sqlite3_file *
walbuf_wal_real(sqlite3 *db)
{
	sqlite3_file *f = NULL;

	if (sqlite3_file_control(db, "main", SQLITE_FCNTL_JOURNAL_POINTER,
		&f) != SQLITE_OK ||
	    f == NULL || f->pMethods != &wb_io.si_m ||
	    !((struct wb_file *)f)->wf_is_wal)
		return NULL;
	return vfs_shim_real(f);
}

static int
wb_close(sqlite3_file *f)
{
	struct wb_file *w = (struct wb_file *)f, **pp;
	sqlite3_file   *r = vfs_shim_real(f);
	int		rc, frc;

	frc = wb_flush(w);
	if (w->wf_is_wal) {
		if (w->wf_main != NULL)
			w->wf_main->wf_wal = NULL;
	} else {
		if (w->wf_wal != NULL)
			w->wf_wal->wf_main = NULL;
		for (pp = &wb_mains; *pp != NULL; pp = &(*pp)->wf_next)
			if (*pp == w) {
				*pp = w->wf_next;
				break;
			}
	}
	free(w->wf_buf);
	w->wf_buf = NULL;
	rc = r->pMethods->xClose(r);
	return frc != SQLITE_OK ? frc : rc;
}

static int
wb_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
	struct wb_file *w = (struct wb_file *)f;
	sqlite3_file   *r = vfs_shim_real(f);
	int		rc;

	if (w->wf_len > 0 && off < w->wf_off + (sqlite3_int64)w->wf_len &&
	    off + n > w->wf_off) {
		/* SQLite reads back frames of its own open transaction. */
		if (off >= w->wf_off &&
		    off + n <= w->wf_off + (sqlite3_int64)w->wf_len) {
			memcpy(p, w->wf_buf + (off - w->wf_off), (size_t)n);
			return SQLITE_OK;
		}
		if ((rc = wb_flush(w)) != SQLITE_OK)
			return rc;
	}
	return r->pMethods->xRead(r, p, n, off);
}

static int
wb_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	struct wb_file *w = (struct wb_file *)f;
	sqlite3_file   *r = vfs_shim_real(f);
	sqlite3_int64	end = w->wf_off + (sqlite3_int64)w->wf_len;
	size_t		need;
	char	       *nb;
	int		rc;

	if (!w->wf_is_wal) {
		wb_writes++;
		return r->pMethods->xWrite(r, p, n, off);
	}
	/* A frame rewritten in place (its checksum chain, say). */
	if (w->wf_len > 0 && off >= w->wf_off && off + n <= end) {
		memcpy(w->wf_buf + (off - w->wf_off), p, (size_t)n);
		return SQLITE_OK;
	}
	if (w->wf_len > 0 &&
	    (off != end || w->wf_len + (size_t)n > WALBUF_MAX)) {
		if ((rc = wb_flush(w)) != SQLITE_OK)
			return rc;
	}
	if ((size_t)n > WALBUF_MAX)
		return wal_write(r, p, n, off);
	if (w->wf_len == 0)
		w->wf_off = off;
	need = w->wf_len + (size_t)n;
	if (need > w->wf_cap) {
		size_t cap = w->wf_cap ? w->wf_cap : 64 * 1024;

		while (cap < need)
			cap *= 2;
		if (cap > WALBUF_MAX)
			cap = WALBUF_MAX;
		if ((nb = realloc(w->wf_buf, cap)) == NULL) {
			/* No memory for gathering: write through. */
			if ((rc = wb_flush(w)) != SQLITE_OK)
				return rc;
			return wal_write(r, p, n, off);
		}
		w->wf_buf = nb;
		w->wf_cap = cap;
	}
	memcpy(w->wf_buf + w->wf_len, p, (size_t)n);
	w->wf_len += (size_t)n;
	/*
	 * SQLite writes a frame as its header, then its page.  After the
	 * page of a commit frame the transaction goes out, where an error
	 * can still fail the commit (the barrier below is the safety net).
	 */
	if (w->wf_commit) {
		w->wf_commit = 0;
		return wb_flush(w);
	}
	if (n == DB_WAL_FRAME_HDR)
		w->wf_commit = memcmp((const char *)p + WAL_FRAME_NTRUNCATE,
				   "\0\0\0\0", 4) != 0;
	return SQLITE_OK;
}

static int
wb_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	sqlite3_file *r = vfs_shim_real(f);
	int	      rc;

	if ((rc = wb_flush((struct wb_file *)f)) != SQLITE_OK)
		return rc;
	/* Not under a fill, which would write past the new end. */
	pthread_mutex_lock(&wb_fill_mu);
	while (wb_fill_to > wb_fill_from)
		pthread_cond_wait(&wb_fill_cond, &wb_fill_mu);
	rc = r->pMethods->xTruncate(r, size);
	pthread_mutex_unlock(&wb_fill_mu);
	return rc;
}

static int
wb_sync(sqlite3_file *f, int flags)
{
	sqlite3_file *r = vfs_shim_real(f);
	int	      rc;

	if ((rc = wb_flush((struct wb_file *)f)) != SQLITE_OK)
		return rc;
	return r->pMethods->xSync(r, flags);
}

static int
wb_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	sqlite3_file *r = vfs_shim_real(f);
	int	      rc;

	if ((rc = wb_flush((struct wb_file *)f)) != SQLITE_OK)
		return rc;
	return r->pMethods->xFileSize(r, size);
}

/* The main file's lock calls: any change empties its WAL's buffer first. */
static int
wb_lock(sqlite3_file *f, int lock)
{
	struct wb_file *w = (struct wb_file *)f;
	sqlite3_file   *r = vfs_shim_real(f);
	int		rc;

	if ((rc = wb_flush(w->wf_wal)) != SQLITE_OK)
		return rc;
	return r->pMethods->xLock(r, lock);
}

static int
wb_unlock(sqlite3_file *f, int lock)
{
	struct wb_file *w = (struct wb_file *)f;
	sqlite3_file   *r = vfs_shim_real(f);
	int		rc;

	if ((rc = wb_flush(w->wf_wal)) != SQLITE_OK)
		return rc;
	return r->pMethods->xUnlock(r, lock);
}

static int
wb_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	struct wb_file *w = (struct wb_file *)f;
	sqlite3_file   *r = vfs_shim_real(f);
	int		rc;

	if ((rc = wb_flush(w->wf_wal)) != SQLITE_OK)
		return rc;
	return r->pMethods->xShmLock(r, offset, n, flags);
}

/*
 * SQLite's walIndexWriteHdr() calls this between writing the two copies
 * of a new WAL index header: the commit becomes visible to readers right
 * after.  Its frames must be in the file by then.
 */
static void
wb_shm_barrier(sqlite3_file *f)
{
	struct wb_file *w = (struct wb_file *)f;
	sqlite3_file   *r = vfs_shim_real(f);

	/*
	 * A failure here has no way back to SQLite, and readers must never
	 * see a commit whose frames are missing: stop before the header is
	 * whole.  The transaction is then not committed (recovery checks the
	 * frames' checksums) and no OK was sent for it.
	 */
	if (wb_flush(w->wf_wal) != SQLITE_OK)
		fatalx("walbuf: cannot write the WAL of a commit");
	r->pMethods->xShmBarrier(r);
}


/* The main file whose WAL is `wal' ("<main>-wal"), if it is open here. */
static struct wb_file *
main_of(const char *wal)
{
	struct wb_file *m;
	size_t		n = strlen(wal);

	if (n < 4 || strcmp(wal + n - 4, "-wal") != 0)
		return NULL;
	for (m = wb_mains; m != NULL; m = m->wf_next)
		if (m->wf_name != NULL && strlen(m->wf_name) == n - 4 &&
		    strncmp(m->wf_name, wal, n - 4) == 0)
			return m;
	return NULL;
}

static int
wb_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
    int *out_flags)
{
	struct wb_file *w = (struct wb_file *)f;
	/* Before pMethods is set, where vfs_shim_real() will find it. */
	sqlite3_file   *r = (sqlite3_file *)(w + 1);
	int		rc;

	(void)vfs;
	memset(w, 0, sizeof(*w));
	if ((rc = wb_real->xOpen(wb_real, name, r, flags, out_flags)) !=
	    SQLITE_OK)
		return rc;
	if (r->pMethods == NULL)
		return rc;
	if (r->pMethods->iVersion < 3) {
		/* Not the default Unix VFS we know: leave it alone. */
		r->pMethods->xClose(r);
		return SQLITE_CANTOPEN;
	}
	w->wf_base.pMethods = &wb_io.si_m;
	w->wf_name = name;
	if (flags & SQLITE_OPEN_WAL) {
		w->wf_is_wal = 1;
		if ((w->wf_main = name ? main_of(name) : NULL) != NULL)
			w->wf_main->wf_wal = w;
	} else if (flags & SQLITE_OPEN_MAIN_DB) {
		w->wf_next = wb_mains;
		wb_mains = w;
	}
	return rc;
}

/*
 * Registers the VFS under WALBUF_VFS, once.  Returns 0, or -1 when the
 * default VFS is missing or older than the version-2 interface we wrap.
 */
int
walbuf_register(void)
{
	if (wb_real != NULL)
		return 0;
	if ((wb_real = sqlite3_vfs_find(NULL)) == NULL ||
	    wb_real->iVersion < 2) {
		wb_real = NULL;
		return -1;
	}
	vfs_shim_init(&wb_vfs, wb_real, WALBUF_VFS,
	    (int)sizeof(struct wb_file) + wb_real->szOsFile);
	wb_vfs.xOpen = wb_open;
	vfs_shim_io_init(&wb_io, sizeof(struct wb_file));
	wb_io.si_m.xClose = wb_close;
	wb_io.si_m.xRead = wb_read;
	wb_io.si_m.xWrite = wb_write;
	wb_io.si_m.xTruncate = wb_truncate;
	wb_io.si_m.xSync = wb_sync;
	wb_io.si_m.xFileSize = wb_file_size;
	wb_io.si_m.xLock = wb_lock;
	wb_io.si_m.xUnlock = wb_unlock;
	wb_io.si_m.xShmLock = wb_shm_lock;
	wb_io.si_m.xShmBarrier = wb_shm_barrier;
	if (sqlite3_vfs_register(&wb_vfs, 0) != SQLITE_OK) {
		wb_real = NULL;
		return -1;
	}
	return 0;
}
