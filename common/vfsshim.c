/*
 * vfsshim.c: the methods a wrapping VFS passes through unchanged
 * (vfsshim.h).  The wrapped VFS is the shim's pAppData.
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
