/*
 * sup_priv.c: graspd's privilege drop (graspd(8), PRIVILEGES).  Started
 * as root, the supervisor stays root, with no network input, so that it
 * can start relayd again on a privileged port; every role is exec'ed as
 * the user of the configuration (NGIT_USER, default graspd), with umask
 * 077, so that its sockets and files are that user's alone.  relayd keeps
 * CAP_NET_BIND_SERVICE (an ambient capability) when its port is below
 * 1024 and nothing else.  Before the first role the run directory
 * becomes the user's with mode 0700, and the data directories the
 * user's.  Not started as root, or with the user root, nothing changes.
 */
#define _GNU_SOURCE
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/types.h>

#include <linux/capability.h>

#include <errno.h>
#include <grp.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "fs.h"
#include "log.h"
#include "supervisor.h"

/* The default of NGIT_USER (graspd.conf(5)). */
#define PRIV_DEFAULT_USER "graspd"
/* The files of relay_data_path the user must own (relayd writes them). */
static const char *const priv_owned[] = { "graspd.db", "graspd.db-wal",
	"graspd.db-shm", ".relay-owner.nsec" };

static int   priv_drop; /* roles run as priv_uid */
static uid_t priv_uid;
static gid_t priv_gid;
static char  priv_home[PATH_MAX + 8]; /* "HOME=..." */

/* Makes dir (created if missing) the user's; mode 0700 if private. */
static int
own_dir(const char *dir, int private, char *err, size_t errlen)
{
	struct stat st;

	if (mkdir_p(dir, 0755) == -1 || stat(dir, &st) == -1) {
		snprintf(err, errlen, "%s: %s", dir, strerror(errno));
		return -1;
	}
	if ((st.st_uid != priv_uid || st.st_gid != priv_gid) &&
	    chown(dir, priv_uid, priv_gid) == -1) {
		snprintf(err, errlen, "chown %s: %s", dir, strerror(errno));
		return -1;
	}
	if (private && (st.st_mode & 07777) != 0700 && chmod(dir, 0700) == -1) {
		snprintf(err, errlen, "chmod %s: %s", dir, strerror(errno));
		return -1;
	}
	return 0;
}

int
sup_priv_init(char *err, size_t errlen)
{
	const char    *user = sv->sv_cfg.user;
	struct passwd *pw;
	struct stat    st;
	char	       path[PATH_MAX];
	size_t	       i;

	if (geteuid() != 0 || user == NULL || *user == '\0')
		return 0;
	errno = 0;
	if ((pw = getpwnam(user)) == NULL) {
		if (strcmp(user, PRIV_DEFAULT_USER) == 0) {
			log_warnx("user %s does not exist: every role runs "
				  "as root (create it, or set NGIT_USER=root)",
			    user);
			return 0;
		}
		snprintf(err, errlen, "NGIT_USER: no user \"%s\"", user);
		return -1;
	}
	if (pw->pw_uid == 0)
		return 0;
	priv_uid = pw->pw_uid;
	priv_gid = pw->pw_gid;
	snprintf(priv_home, sizeof(priv_home), "HOME=%s", pw->pw_dir);
	if (own_dir(sv->sv_cfg.run_path, 1, err, errlen) == -1 ||
	    own_dir(sv->sv_cfg.relay_data_path, 0, err, errlen) == -1 ||
	    own_dir(sv->sv_cfg.git_data_path, 0, err, errlen) == -1)
		return -1;
	/* Files of an earlier run as root: say so rather than fail later. */
	for (i = 0; i < sizeof(priv_owned) / sizeof(priv_owned[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s",
		    sv->sv_cfg.relay_data_path, priv_owned[i]);
		if (stat(path, &st) == 0 && st.st_uid != priv_uid) {
			snprintf(err, errlen,
			    "%s belongs to uid %u, not to "
			    "%s: chown -R %s: %s %s",
			    path, (unsigned)st.st_uid, user, user,
			    sv->sv_cfg.relay_data_path,
			    sv->sv_cfg.git_data_path);
			return -1;
		}
	}
	priv_drop = 1;
	log_info("roles run as %s (uid %u, gid %u)", user, (unsigned)priv_uid,
	    (unsigned)priv_gid);
	return 0;
}

void
sup_priv_socket(const char *path)
{
	if (!priv_drop)
		return;
	if (chown(path, priv_uid, priv_gid) == -1)
		log_warn("chown %s", path);
	if (chmod(path, 0600) == -1)
		log_warn("chmod %s", path);
}

const char *
sup_priv_home(void)
{
	return priv_drop ? priv_home : NULL;
}

int
sup_priv_child(int bind_cap)
{
	struct __user_cap_header_struct hdr;
	struct __user_cap_data_struct	data[2];
	gid_t				gid = priv_gid;

	if (!priv_drop)
		return 0;
	umask(077);
	/* Raw system calls: this runs in a forked copy before exec. */
	if (bind_cap && prctl(PR_SET_KEEPCAPS, 1, 0, 0, 0) == -1)
		return -1;
	if (syscall(SYS_setgroups, 1, &gid) == -1 ||
	    syscall(SYS_setresgid, gid, gid, gid) == -1 ||
	    syscall(SYS_setresuid, priv_uid, priv_uid, priv_uid) == -1)
		return -1;
	if (!bind_cap)
		return 0;
	memset(&hdr, 0, sizeof(hdr));
	memset(data, 0, sizeof(data));
	hdr.version = _LINUX_CAPABILITY_VERSION_3;
	data[0].effective = data[0].permitted = data[0].inheritable = 1u
	    << CAP_NET_BIND_SERVICE;
	if (syscall(SYS_capset, &hdr, data) == -1 ||
	    prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_RAISE, CAP_NET_BIND_SERVICE, 0,
		0) == -1)
		return -1;
	return prctl(PR_SET_KEEPCAPS, 0, 0, 0, 0);
}
