#!/bin/sh
# Builds a Debian package of graspd with dpkg-deb, offline: "make deb".
# The programs are built for PREFIX=/usr into $O/deb/build (the roles in
# /usr/libexec/graspd, compiled into graspd), installed with
# "make install" into a staging tree, and packed with the manual pages
# compressed, the binaries stripped, the sample configuration as the
# conffile /etc/graspd/graspd.conf, the init script and the systemd unit,
# and a postinst that creates the user graspd and the data directories.
# Writes $DEB_OUT/graspd_<version>_<arch>.deb (DEB_OUT defaults to
# $O/deb) and prints its path on the last line.
set -eu

top=$(cd "$(dirname "$0")/.." && pwd)
cd "$top"
O=${O:-build}
case $O in /*) ;; *) O=$top/$O ;; esac
DEB_OUT=${DEB_OUT:-$O/deb}
case $DEB_OUT in /*) ;; *) DEB_OUT=$top/$DEB_OUT ;; esac
MAKE=${MAKE:-make}
maint=${DEB_MAINTAINER:-graspd maintainers <maintainers@users.noreply.a-seed-f202d26c.example>}

# A native version from the commit: 0.1~git<date>.<hash>, or 0.1.
if v=$(git log -1 --format='%cd.%h' --date=format:%Y%m%d 2>/dev/null) &&
    [ -n "$v" ]; then
	version=${DEB_VERSION:-0.1~git$v}
else
	version=${DEB_VERSION:-0.1}
fi
arch=$(dpkg --print-architecture)

build=$O/deb/build
stage=$O/deb/stage
rm -rf "$stage"
mkdir -p "$build" "$stage" "$DEB_OUT"

paths="PREFIX=/usr LIBEXECDIR=/usr/libexec/graspd SYSCONFDIR=/etc/graspd
    SYSTEMDUNITDIR=/lib/systemd/system INITDIR=/etc/init.d O=$build
    BIN=$build/bin"
# shellcheck disable=SC2086
$MAKE -s -j2 $paths all >&2
# make install puts the configuration, the init script and the unit in
# their places; the package's conffile is the configuration, no sample.
# shellcheck disable=SC2086
$MAKE -s $paths DESTDIR="$stage" install >&2
rm -f "$stage/etc/graspd/graspd.conf.sample"
chmod 0755 "$stage/etc/init.d/graspd"
chmod 0644 "$stage/lib/systemd/system/graspd.service" \
    "$stage/etc/graspd/graspd.conf"

for f in "$stage"/usr/sbin/* "$stage"/usr/libexec/graspd/*; do
	strip --strip-unneeded --remove-section=.comment \
	    --remove-section=.note "$f"
done
find "$stage/usr/share/man" -type f -name '*.[0-9]' -exec gzip -9n {} +

doc=$stage/usr/share/doc/graspd
install -d -m 0755 "$doc"
cat > "$doc/copyright" <<EOF
Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/
Upstream-Name: graspd
Comment: Built from the graspd source tree, which states no licence yet.

Files: *
Copyright: the graspd authors
License: not-stated
 The source tree of graspd carries no licence statement at the time of
 this build; ask its maintainers before redistributing this package.
EOF
{
	printf 'graspd (%s) unstable; urgency=medium\n\n' "$version"
	printf '  * Built from commit %s.\n\n' \
	    "$(git rev-parse --short HEAD 2>/dev/null || echo unknown)"
	printf ' -- %s  %s\n' "$maint" \
	    "$(date -R -d "@$(git log -1 --format=%ct 2>/dev/null || date +%s)")"
} | gzip -9n > "$doc/changelog.gz"
chmod 0644 "$doc/copyright" "$doc/changelog.gz"

# Control files.
ctl=$stage/DEBIAN
install -d -m 0755 "$ctl"
printf '/etc/graspd/graspd.conf\n/etc/init.d/graspd\n' > "$ctl/conffiles"
cat > "$ctl/postinst" <<'EOF'
#!/bin/sh
# postinst of graspd: the user the roles run as (PRIVILEGES in graspd(8))
# and the data directories of the default configuration.
set -e
if [ "$1" = configure ]; then
	if ! getent passwd graspd >/dev/null; then
		useradd --system --user-group --home-dir /var/lib/graspd \
		    --no-create-home --shell /usr/sbin/nologin graspd
	fi
	install -d -m 0755 /var/lib/graspd
	for d in /var/lib/graspd/relay /var/lib/graspd/git; do
		[ -d "$d" ] || install -d -m 0750 -o graspd -g graspd "$d"
	done
	if [ -x /etc/init.d/graspd ]; then
		update-rc.d graspd defaults >/dev/null
	fi
	if [ -d /run/systemd/system ]; then
		systemctl --system daemon-reload >/dev/null || true
	fi
fi
exit 0
EOF
cat > "$ctl/prerm" <<'EOF'
#!/bin/sh
# prerm of graspd: stop it before its files go.
set -e
if [ "$1" = remove ] && [ -x /etc/init.d/graspd ]; then
	invoke-rc.d graspd stop || true
fi
exit 0
EOF
cat > "$ctl/postrm" <<'EOF'
#!/bin/sh
# postrm of graspd: the init script's links go on purge.  The user and
# /var/lib/graspd (the hosted data) stay.
set -e
if [ "$1" = purge ]; then
	update-rc.d graspd remove >/dev/null
fi
if [ -d /run/systemd/system ]; then
	systemctl --system daemon-reload >/dev/null || true
fi
exit 0
EOF
chmod 0755 "$ctl/postinst" "$ctl/prerm" "$ctl/postrm"

# Depends: the shared libraries' packages (dpkg-shlibdeps), git, useradd.
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir "$tmp/debian"
printf 'Source: graspd\n\nPackage: graspd\nArchitecture: any\n' \
    > "$tmp/debian/control"
shlibs=$(cd "$tmp" && dpkg-shlibdeps -O "$stage"/usr/sbin/* \
    "$stage"/usr/libexec/graspd/* 2>/dev/null | sed -n 's/^shlibs:Depends=//p')
size=$(du -sk --exclude=DEBIAN "$stage" | cut -f1)
cat > "$ctl/control" <<EOF
Package: graspd
Version: $version
Architecture: $arch
Maintainer: $maint
Installed-Size: $size
Depends: $shlibs, git, passwd
Section: net
Priority: optional
Description: GRASP server: a Nostr relay that hosts git repositories
 graspd is a GRASP server written in C: a Nostr relay for NIP-34 git
 collaboration (repository announcements, state, issues, patches, pull
 requests and their discussion) that also serves the git data over smart
 HTTP, syncs the events of the repositories it hosts from the other relays
 that carry them (GRASP-02) and follows participants' own mailboxes
 (GRASP-03).  A supervisor, graspd, runs the roles relayd, syncd,
 discoveryd and historyd as an unprivileged user; graspctl controls them.
EOF
(cd "$stage" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' |
    LC_ALL=C sort -z | xargs -0 md5sum) > "$ctl/md5sums"
chmod 0644 "$ctl/control" "$ctl/conffiles" "$ctl/md5sums"

deb=$DEB_OUT/graspd_${version}_${arch}.deb
dpkg-deb --root-owner-group -Zxz --build "$stage" "$deb" >&2
echo "$deb"
