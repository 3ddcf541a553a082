/*
 * deb_test.c: "make deb" (scripts/deb.sh).  Builds the package, checks
 * its file list (programs, roles, every manual page, the conffile, the
 * init script and unit with /usr paths) and control files, runs its
 * postinst against stub commands (the user and the data directories,
 * without touching this machine), unpacks it into a clean root with
 * dpkg-deb -x, checks the installed configuration with "graspd -n", and
 * requires lintian to find no error.  Runs in the source tree (as
 * tests/run.sh does), with the build directory $O (default build).
 */
#include <sys/stat.h>

#include <dirent.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ctl.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"

static char		tmpdir[256];
static struct tdir_prog tp = { tmpdir, sizeof(tmpdir), "graspd-deb" };
static char		deb[1024];

/* Runs cmd (through sh); its status, its output in *out if wanted. */
static int sh(char **out, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static int
sh(char **out, const char *fmt, ...)
{
	char	cmd[4096];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return ctl_run(cmd, out);
}

/* 1 if the text holds the line exactly. */
static int
has_line(const char *text, const char *line)
{
	size_t	    n = strlen(line);
	const char *p;

	for (p = text; (p = strstr(p, line)) != NULL; p += n)
		if ((p == text || p[-1] == '\n') &&
		    (p[n] == '\n' || p[n] == '\0'))
			return 1;
	return 0;
}

static void
test_make_deb_builds_a_package(void)
{
	const char *o = getenv("O");
	char	   *out = NULL, *nl;

	T_ASSERT(sh(&out,
		     "env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s deb "
		     "O='%s' DEB_OUT='%s' 2>&1",
		     o != NULL && *o != '\0' ? o : "build", tmpdir) == 0);
	/* The path is the last line. */
	while ((nl = strrchr(out, '\n')) != NULL && nl[1] == '\0')
		*nl = '\0';
	snprintf(deb, sizeof(deb), "%s",
	    (nl = strrchr(out, '\n')) != NULL ? nl + 1 : out);
	free(out);
	T_ASSERT(strstr(deb, "/graspd_") != NULL && access(deb, R_OK) == 0);
}

static void
test_package_holds_every_file(void)
{
	static const char *const want[] = {
		"./usr/sbin/graspd",
		"./usr/sbin/graspctl",
		"./usr/libexec/graspd/relayd",
		"./usr/libexec/graspd/syncd",
		"./usr/libexec/graspd/discoveryd",
		"./usr/libexec/graspd/historyd",
		"./etc/graspd/graspd.conf",
		"./etc/init.d/graspd",
		"./lib/systemd/system/graspd.service",
		"./usr/share/doc/graspd/copyright",
		"./usr/share/doc/graspd/changelog.gz",
	};
	struct dirent *de;
	DIR	      *d;
	char	      *list = NULL, *f = NULL, line[512];
	size_t	       i, len;

	T_ASSERT(deb[0] != '\0');
	T_ASSERT(sh(&list, "dpkg-deb --fsys-tarfile '%s' | tar -t", deb) == 0);
	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		if (!has_line(list, want[i])) {
			printf("# missing %s\n", want[i]);
			T_CHECK(!"file in the package");
		}
	/* Every manual page of the tree, compressed. */
	T_ASSERT((d = opendir("man")) != NULL);
	while ((de = readdir(d)) != NULL) {
		len = strlen(de->d_name);
		if (len < 3 || de->d_name[len - 2] != '.' ||
		    (de->d_name[len - 1] != '5' && de->d_name[len - 1] != '8'))
			continue;
		snprintf(line, sizeof(line), "./usr/share/man/man%c/%s.gz",
		    de->d_name[len - 1], de->d_name);
		if (!has_line(list, line)) {
			printf("# missing %s\n", line);
			T_CHECK(!"manual page in the package");
		}
	}
	closedir(d);
	/* Nothing under /usr/local. */
	T_CHECK(strstr(list, "./usr/local") == NULL);
	free(list);

	T_ASSERT(sh(&f, "dpkg-deb -f '%s' Package Depends", deb) == 0);
	T_CHECK(strstr(f, "Package: graspd\n") != NULL);
	T_CHECK(strstr(f, "libwebsockets") != NULL &&
	    strstr(f, "libc6") != NULL && strstr(f, ", git") != NULL);
	free(f);
}

/*
 * Commands in dir that append "name args" to log and succeed, except
 * getent, which finds nothing.  0 or -1.
 */
static int
make_stubs(const char *dir, const char *log)
{
	static const char *const cmds[] = { "getent", "useradd", "install",
		"update-rc.d", "systemctl", "invoke-rc.d" };
	char			 path[900];
	FILE			*f;
	size_t			 i;

	if (mkdir(dir, 0755) == -1)
		return -1;
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", dir, cmds[i]);
		if ((f = fopen(path, "w")) == NULL)
			return -1;
		fprintf(f, "#!/bin/sh\necho \"%s $*\" >> '%s'\nexit %d\n",
		    cmds[i], log, strcmp(cmds[i], "getent") == 0 ? 2 : 0);
		if (fclose(f) == EOF || chmod(path, 0755) == -1)
			return -1;
	}
	return 0;
}

static void
test_conffiles_and_postinst(void)
{
	char *out = NULL, ctl[700], stubs[700], log[800];

	T_ASSERT(deb[0] != '\0');
	snprintf(ctl, sizeof(ctl), "%s/control", tmpdir);
	T_ASSERT(sh(NULL, "dpkg-deb -e '%s' '%s'", deb, ctl) == 0);
	T_ASSERT(sh(&out, "cat '%s/conffiles'", ctl) == 0);
	T_CHECK(has_line(out, "/etc/graspd/graspd.conf"));
	T_CHECK(has_line(out, "/etc/init.d/graspd"));
	free(out);
	out = NULL;
	if (sh(NULL, "command -v shellcheck >/dev/null") == 0) {
		T_CHECK(sh(&out,
			    "shellcheck -s sh '%s/postinst' '%s/prerm' "
			    "'%s/postrm' 2>&1",
			    ctl, ctl, ctl) == 0);
		if (out != NULL && *out != '\0')
			printf("# %s", out);
		free(out);
		out = NULL;
	}

	/*
	 * The postinst against stubs that log their arguments: no such
	 * user yet, so it makes one, then the data directories.
	 */
	snprintf(stubs, sizeof(stubs), "%s/stubs", tmpdir);
	snprintf(log, sizeof(log), "%s/calls", tmpdir);
	T_ASSERT(make_stubs(stubs, log) == 0);
	T_ASSERT(sh(NULL, "PATH='%s' /bin/sh '%s/postinst' configure", stubs,
		     ctl) == 0);
	T_ASSERT(sh(&out, "cat '%s'", log) == 0);
	T_CHECK(has_line(out, "getent passwd graspd"));
	T_CHECK(strstr(out, "useradd --system --user-group ") != NULL &&
	    strstr(out, " graspd\n") != NULL);
	T_CHECK(has_line(out, "install -d -m 0755 /var/lib/graspd"));
	T_CHECK(access("/var/lib/graspd/relay", F_OK) == 0 ||
	    has_line(out,
		"install -d -m 0750 -o graspd -g graspd "
		"/var/lib/graspd/relay"));
	T_CHECK(access("/var/lib/graspd/git", F_OK) == 0 ||
	    has_line(out,
		"install -d -m 0750 -o graspd -g graspd "
		"/var/lib/graspd/git"));
	free(out);
}

static void
test_unpacked_package_checks_its_configuration(void)
{
	char root[700], run[700], *out = NULL;

	T_ASSERT(deb[0] != '\0');
	snprintf(root, sizeof(root), "%s/root", tmpdir);
	T_ASSERT(mkdir(root, 0755) == 0);
	T_ASSERT(sh(NULL, "dpkg-deb -x '%s' '%s'", deb, root) == 0);
	T_ASSERT(sh(&out,
		     "'%s/usr/sbin/graspd' -n -f '%s/etc/graspd/"
		     "graspd.conf' 2>&1",
		     root, root) == 0);
	T_CHECK(strstr(out, "configuration OK") != NULL);
	free(out);
	out = NULL;
	/* The paths of the package, in the programs and the scripts. */
	/* graspd looks for its roles where the package puts them. */
	snprintf(run, sizeof(run), "%s/data", tmpdir);
	T_CHECK(
	    sh(&out,
		"timeout 20 env -i PATH=/usr/bin:/bin NGIT_USER=root "
		"NGIT_RUN_PATH='%s/run' NGIT_RELAY_DATA_PATH='%s/relay' "
		"NGIT_GIT_DATA_PATH='%s/git' NGIT_BIND_ADDRESS=127.0.0.1:%d "
		"'%s/usr/sbin/graspd' -d 2>&1",
		run, run, run, relayproc_free_port("127.0.0.1"), root) != -1);
	T_CHECK(out != NULL &&
	    strstr(out, "roles from /usr/libexec/graspd)") != NULL);
	free(out);
	out = NULL;
	T_CHECK(sh(NULL,
		    "grep -q '^GRASPD=/usr/sbin/graspd$' "
		    "'%s/etc/init.d/graspd'",
		    root) == 0);
	T_CHECK(sh(NULL,
		    "grep -q '^ExecStart=/usr/sbin/graspd ' "
		    "'%s/lib/systemd/system/graspd.service'",
		    root) == 0);
	T_CHECK(sh(NULL,
		    "! grep -rqE '/usr/local/(s?bin/grasp|libexec)' "
		    "'%s/etc' '%s/lib'",
		    root, root) == 0);
	T_CHECK(sh(NULL,
		    "zcat '%s/usr/share/man/man8/graspd.8.gz' | "
		    "mandoc -Tlint -W error >/dev/null 2>&1",
		    root) == 0);
}

static void
test_lintian_finds_no_error(void)
{
	char *out = NULL, *p;
	int   errors = 0;

	T_ASSERT(deb[0] != '\0');
	T_ASSERT(sh(NULL, "command -v lintian >/dev/null") == 0);
	T_ASSERT(sh(&out, "lintian --no-tag-display-limit '%s' 2>/dev/null",
		     deb) != -1);
	for (p = out; p != NULL && *p != '\0';
	     p = strchr(p, '\n') ? strchr(p, '\n') + 1 : NULL) {
		if (strncmp(p, "E: ", 3) == 0) {
			printf("# %.*s\n", (int)strcspn(p, "\n"), p);
			errors++;
		}
	}
	T_EQ_INT(errors, 0);
	free(out);
}

static const struct t_case cases[] = {
	T_CASE(test_make_deb_builds_a_package),
	T_CASE(test_package_holds_every_file),
	T_CASE(test_conffiles_and_postinst),
	T_CASE(test_unpacked_package_checks_its_configuration),
	T_CASE(test_lintian_finds_no_error),
};

T_MAIN_FIXTURE(cases, &tdir_fixture, &tp, 0)
