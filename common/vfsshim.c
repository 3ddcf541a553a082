/*
 * vfsshim.c: the methods a wrapping VFS passes through unchanged
 * (vfsshim.h).  The wrapped VFS is the shim's pAppData; a wrapped file
 * follows the shim's header, whose size its methods table carries.
 */
#include <string.h>

#include "vfsshim.h"

#define REAL(v) ((sqlite3_vfs *)(v)->pAppData)

static int
shim_open(sqlite3_vfs *vfs, const char *name, sqlite3_file *f, int flags,
    int *out_flags)
{
	return REAL(vfs)->xOpen(REAL(vfs), name, f, flags, out_flags);
}

static int
shim_delete(sqlite3_vfs *vfs, const char *name, int sync_dir)
{
	return REAL(vfs)->xDelete(REAL(vfs), name, sync_dir);
}

static int
shim_access(sqlite3_vfs *vfs, const char *name, int flags, int *out)
{
	return REAL(vfs)->xAccess(REAL(vfs), name, flags, out);
}

static int
shim_full_pathname(sqlite3_vfs *vfs, const char *name, int n, char *out)
{
	return REAL(vfs)->xFullPathname(REAL(vfs), name, n, out);
}

static void *
shim_dlopen(sqlite3_vfs *vfs, const char *name)
{
	return REAL(vfs)->xDlOpen(REAL(vfs), name);
}

static void
shim_dlerror(sqlite3_vfs *vfs, int n, char *out)
{
	REAL(vfs)->xDlError(REAL(vfs), n, out);
}

static void (*shim_dlsym(sqlite3_vfs *vfs, void *h, const char *sym))(void)
{
	return REAL(vfs)->xDlSym(REAL(vfs), h, sym);
}

static void
shim_dlclose(sqlite3_vfs *vfs, void *h)
{
	REAL(vfs)->xDlClose(REAL(vfs), h);
}

static int
shim_randomness(sqlite3_vfs *vfs, int n, char *out)
{
	return REAL(vfs)->xRandomness(REAL(vfs), n, out);
}

static int
shim_sleep(sqlite3_vfs *vfs, int us)
{
	return REAL(vfs)->xSleep(REAL(vfs), us);
}

static int
shim_current_time(sqlite3_vfs *vfs, double *out)
{
	return REAL(vfs)->xCurrentTime(REAL(vfs), out);
}

static int
shim_get_last_error(sqlite3_vfs *vfs, int n, char *out)
{
	return REAL(vfs)->xGetLastError ?
	    REAL(vfs)->xGetLastError(REAL(vfs), n, out) :
	    0;
}

static int
shim_current_time_int64(sqlite3_vfs *vfs, sqlite3_int64 *out)
{
	return REAL(vfs)->xCurrentTimeInt64(REAL(vfs), out);
}

sqlite3_file *
vfs_shim_real(sqlite3_file *f)
{
	const struct vfs_shim_io *io = (const struct vfs_shim_io *)f->pMethods;

	return (sqlite3_file *)((char *)f + io->si_hdr);
}

static int
file_close(sqlite3_file *f)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xClose(r);
}

static int
file_read(sqlite3_file *f, void *p, int n, sqlite3_int64 off)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xRead(r, p, n, off);
}

static int
file_write(sqlite3_file *f, const void *p, int n, sqlite3_int64 off)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xWrite(r, p, n, off);
}

static int
file_truncate(sqlite3_file *f, sqlite3_int64 size)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xTruncate(r, size);
}

static int
file_sync(sqlite3_file *f, int flags)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xSync(r, flags);
}

static int
file_file_size(sqlite3_file *f, sqlite3_int64 *size)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xFileSize(r, size);
}

static int
file_lock(sqlite3_file *f, int lock)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xLock(r, lock);
}

static int
file_unlock(sqlite3_file *f, int lock)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xUnlock(r, lock);
}

static int
file_check_reserved_lock(sqlite3_file *f, int *out)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xCheckReservedLock(r, out);
}

static int
file_file_control(sqlite3_file *f, int op, void *arg)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xFileControl(r, op, arg);
}

static int
file_sector_size(sqlite3_file *f)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xSectorSize(r);
}

static int
file_device_characteristics(sqlite3_file *f)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xDeviceCharacteristics(r);
}

static int
file_shm_map(sqlite3_file *f, int pg, int pgsz, int extend, void volatile **pp)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xShmMap(r, pg, pgsz, extend, pp);
}

static int
file_shm_lock(sqlite3_file *f, int offset, int n, int flags)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xShmLock(r, offset, n, flags);
}

static void
file_shm_barrier(sqlite3_file *f)
{
	sqlite3_file *r = vfs_shim_real(f);

	r->pMethods->xShmBarrier(r);
}

static int
file_shm_unmap(sqlite3_file *f, int del)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xShmUnmap(r, del);
}

static int
file_fetch(sqlite3_file *f, sqlite3_int64 off, int n, void **pp)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xFetch(r, off, n, pp);
}

static int
file_unfetch(sqlite3_file *f, sqlite3_int64 off, void *p)
{
	sqlite3_file *r = vfs_shim_real(f);

	return r->pMethods->xUnfetch(r, off, p);
}

void
vfs_shim_io_init(struct vfs_shim_io *io, size_t hdr)
{
	memset(io, 0, sizeof(*io));
	io->si_hdr = hdr;
	io->si_m.iVersion = 3;
	io->si_m.xClose = file_close;
	io->si_m.xRead = file_read;
	io->si_m.xWrite = file_write;
	io->si_m.xTruncate = file_truncate;
	io->si_m.xSync = file_sync;
	io->si_m.xFileSize = file_file_size;
	io->si_m.xLock = file_lock;
	io->si_m.xUnlock = file_unlock;
	io->si_m.xCheckReservedLock = file_check_reserved_lock;
	io->si_m.xFileControl = file_file_control;
	io->si_m.xSectorSize = file_sector_size;
	io->si_m.xDeviceCharacteristics = file_device_characteristics;
	io->si_m.xShmMap = file_shm_map;
	io->si_m.xShmLock = file_shm_lock;
	io->si_m.xShmBarrier = file_shm_barrier;
	io->si_m.xShmUnmap = file_shm_unmap;
	io->si_m.xFetch = file_fetch;
	io->si_m.xUnfetch = file_unfetch;
}

void
vfs_shim_init(sqlite3_vfs *shim, sqlite3_vfs *real, const char *name,
    int file_size)
{
	memset(shim, 0, sizeof(*shim));
	shim->iVersion = 2;
	shim->szOsFile = file_size;
	shim->mxPathname = real->mxPathname;
	shim->zName = name;
	shim->pAppData = real;
	shim->xOpen = shim_open;
	shim->xDelete = shim_delete;
	shim->xAccess = shim_access;
	shim->xFullPathname = shim_full_pathname;
	shim->xDlOpen = shim_dlopen;
	shim->xDlError = shim_dlerror;
	shim->xDlSym = shim_dlsym;
	shim->xDlClose = shim_dlclose;
	shim->xRandomness = shim_randomness;
	shim->xSleep = shim_sleep;
	shim->xCurrentTime = shim_current_time;
	shim->xGetLastError = shim_get_last_error;
	shim->xCurrentTimeInt64 = shim_current_time_int64;
}
