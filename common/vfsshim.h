/*
 * vfsshim.h: the pass-through half of a wrapping SQLite VFS.  walbuf.c
 * (the writer's write gathering) and powercut.c (the power-cut test's
 * recorder) each wrap the VFS beneath them and change only how files are
 * opened (and, for the recorder, deleted); every other method of theirs
 * is this one, which hands the call to the wrapped VFS kept in
 * pAppData, or to the wrapped file that follows the shim's own header.
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

/*
 * A shim's file methods.  Its files are its own header of si_hdr bytes
 * (starting with the sqlite3_file whose pMethods is &si_m) followed by
 * the wrapped VFS's file.
 */
struct vfs_shim_io {
	sqlite3_io_methods si_m;
	size_t		   si_hdr;
};

/*
 * Fills io as version-3 methods that each forward to the wrapped file
 * (set the shim's own after), for files whose header is hdr bytes.
 */
void	      vfs_shim_io_init(struct vfs_shim_io *io, size_t hdr);
/* The wrapped VFS's file behind f, a file of a vfs_shim_io. */
sqlite3_file *vfs_shim_real(sqlite3_file *f);

#endif
