/*
 * vfsshim.h: the pass-through half of a wrapping SQLite VFS.  walbuf.c
 * (the writer's write gathering) and powercut.c (the power-cut test's
 * recorder) each wrap the VFS beneath them and change only how files are
 * opened (and, for the recorder, deleted); every other method of theirs
 * is this one, which hands the call to the wrapped VFS kept in
 * pAppData.
 */
#ifndef GRASPD_VFSSHIM_H
#define GRASPD_VFSSHIM_H

#include <sqlite3.h>

/*
 * Fills shim as a version-2 VFS named name over real, whose files are
 * file_size bytes (the shim's own header plus real->szOsFile): every
 * method forwards to real, xOpen included (set the shim's own after).
 * real must be version 2 or later.
 */
void vfs_shim_init(sqlite3_vfs *shim, sqlite3_vfs *real, const char *name,
    int file_size);

#endif
