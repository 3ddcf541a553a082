#!/bin/sh
# tests/lint/run.sh: the checks of the repository itself, not of the
# programs' behaviour (`make lint`; the lint group of tests/run.sh).
# Each check prints "ok - NAME" or "not ok - NAME" with the offending lines
# as "# " comments:
#
#   format    every tracked C file is as .clang-format writes it
#   man       the manual pages are mandoc -Tlint clean
#   scripts   the init script passes sh -n and shellcheck; the unit keeps
#             what graspd(8) promises of it
#   filemap   every .c of a program's folder is named in the file map at
#             the top of that folder's header, and every name in a map is
#             a file
#   funclen   no function of the programs (tests/ aside) passes
#             FUNC_MAX lines from its "{" to its "}" at column 0, but
#             the parsers named in FUNC_LONG
#   install   make install into a DESTDIR gives a setup graspd accepts,
#             keeps an operator's file, creates no user; make uninstall
#             removes what it put there and nothing else
#
# A check whose tool is missing (clang-format, mandoc, shellcheck) says
# so and is skipped.  BIN (default bin) holds the built programs the
# install check installs (GRASPD_BIN, as tests/run.sh sets it, first).
set -u

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top" || exit 1
BIN=${GRASPD_BIN:-${BIN:-bin}}
case $BIN in /*) ;; *) BIN=$top/$BIN ;; esac

tmp=$(mktemp -d "${TMPDIR:-/tmp}/graspd-lint.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT
failed=0

# verdict NAME FILE: ok when FILE is empty, otherwise not ok with FILE's
# first lines.
verdict() {
	if [ -s "$2" ]; then
		echo "not ok - $1"
		head -n 30 "$2" | sed 's/^/# /'
		failed=$((failed + 1))
	else
		echo "ok - $1"
	fi
}

# The C files of the tree: git's list, or every .c and .h outside build
# directories where the tree is not a checkout.
c_files() {
	git ls-files '*.c' '*.h' 2>/dev/null ||
	    find . -path ./build -prune -o -name '*.[ch]' -print
}

check_format() {
	if ! command -v clang-format >/dev/null; then
		echo "# skip: clang-format not installed"
		return
	fi
	c_files | xargs clang-format --dry-run --Werror >"$tmp/format" 2>&1
	verdict format "$tmp/format"
}

check_man() {
	: >"$tmp/man"
	for p in man/graspd.8 man/graspctl.8 man/graspd.conf.5; do
		[ -f "$p" ] || echo "$p: missing" >>"$tmp/man"
	done
	if ! command -v mandoc >/dev/null; then
		echo "# skip: mandoc not installed"
	else
		# The system's manual database, and references to our own
		# pages (not installed where mandoc looks), are not faults.
		mandoc -Tlint man/*.[1-9] 2>&1 | while IFS= read -r line; do
			case $line in
			*mandoc.db*) continue ;;
			*"referenced manual not found: Xr "*)
				ref=${line##*Xr }
				set -- $ref
				[ -f "man/$1.$2" ] && continue
				;;
			esac
			echo "$line"
		done >>"$tmp/man"
	fi
	verdict man "$tmp/man"
}

check_scripts() {
	: >"$tmp/scripts"
	sh -n etc/graspd.init >>"$tmp/scripts" 2>&1
	if command -v shellcheck >/dev/null; then
		shellcheck -s sh etc/graspd.init >>"$tmp/scripts" 2>&1
	else
		echo "# skip: shellcheck not installed"
	fi
	for want in '^Type=notify$' 'graspd -n' 'graspd -d' \
	    'graspctl.*reload' '^Restart=on-failure$'; do
		grep -q -- "$want" etc/graspd.service ||
		    echo "etc/graspd.service: no line matching $want" \
			>>"$tmp/scripts"
	done
	verdict scripts "$tmp/scripts"
}

# map_names HEADER: the file names the map at the top of HEADER lists (a
# line " * name.c   what it does" in the first comment).
map_names() {
	sed -n '1,/\*\//p' "$1" |
	    sed -n 's/^ \* \([a-z_][a-z0-9_]*\.c\)\( .*\)\{0,1\}$/\1/p'
}

check_filemap() {
	: >"$tmp/filemap"
	for d in relayd syncd discoveryd historyd supervisor graspctl; do
		h=$d/$d.h
		[ -d "$d" ] || continue
		if [ ! -f "$h" ]; then
			echo "$d: no $h with a file map" >>"$tmp/filemap"
			continue
		fi
		map_names "$h" | sort -u >"$tmp/map"
		for f in "$d"/*.c; do
			[ -f "$f" ] || continue
			grep -qx "${f##*/}" "$tmp/map" ||
			    echo "$h: the map does not name ${f##*/}" \
				>>"$tmp/filemap"
		done
		while IFS= read -r n; do
			[ -f "$d/$n" ] ||
			    echo "$h: the map names $n, which is not in $d/" \
				>>"$tmp/filemap"
		done <"$tmp/map"
	done
	verdict filemap "$tmp/filemap"
}

# Ours (issue 42): a function a newcomer reads on two screens.  The
# parsers stay whole: each is one state machine over its input.
FUNC_MAX=100
FUNC_LONG='common/relayurl.c:canon common/filter.c:filter_parse
common/json.c:parse_string common/negentropy.c:reconcile
common/wsclient.c:http_request'

# The C files of the programs: git's list, or a find where the tree is
# not a checkout.
program_c_files() {
	{ git ls-files '*.c' 2>/dev/null ||
	    find . -path ./build -prune -o -name '*.c' -print; } |
	    sed 's|^\./||' | grep -v '^tests/'
}

check_funclen() {
	# shellcheck disable=SC2016 # awk's own $0, not the shell's
	program_c_files | xargs awk -v max="$FUNC_MAX" -v long="$FUNC_LONG" '
	BEGIN { n = split(long, l, /[ \n]+/); for (i = 1; i <= n; i++) ok[l[i]] = 1 }
	FNR == 1 { inb = 0 }
	/^[A-Za-z_][A-Za-z0-9_]*\(/ && !inb { name = $0; sub(/\(.*/, "", name) }
	/^\{/ && !inb { inb = 1; start = FNR; next }
	/^\}/ && inb {
		inb = 0
		if (FNR - start + 1 > max && !((FILENAME ":" name) in ok))
			printf "%s: %s is %d lines (at most %d)\n", FILENAME,
			    name, FNR - start + 1, max
	}' >"$tmp/funclen"
	verdict funclen "$tmp/funclen"
}

check_install() {
	dest=$tmp/dest
	: >"$tmp/install"
	if [ ! -x "$BIN/graspd" ]; then
		echo "$BIN/graspd: not built" >"$tmp/install"
		verdict install "$tmp/install"
		return
	fi
	inst="make -s -o all BIN=$BIN DESTDIR=$dest PREFIX=/usr/local"
	passwd_before=$(cksum </etc/passwd)
	if ! $inst install >"$tmp/out" 2>&1; then
		{ echo "make install failed:"; cat "$tmp/out"; } >>"$tmp/install"
		verdict install "$tmp/install"
		return
	fi
	conf=$dest/etc/graspd/graspd.conf
	env -u NGIT_RUN_PATH -u NGIT_BIND_ADDRESS \
	    "$dest/usr/local/sbin/graspd" -n -f "$conf" >"$tmp/out" 2>&1
	grep -q 'configuration OK' "$tmp/out" ||
	    { echo "graspd -n on the installed file:"; cat "$tmp/out"; } \
		>>"$tmp/install"
	[ -f "$dest/etc/graspd/graspd.conf.sample" ] ||
	    echo "no graspd.conf.sample" >>"$tmp/install"
	grep -qx 'ExecStart=/usr/local/sbin/graspd -d -f /etc/graspd/graspd.conf' \
	    "$dest/usr/local/lib/systemd/system/graspd.service" 2>/dev/null ||
	    echo "the unit does not start the installed graspd" \
		>>"$tmp/install"
	[ -x "$dest/etc/init.d/graspd" ] &&
	    grep -qx 'CONF=/etc/graspd/graspd.conf' "$dest/etc/init.d/graspd" ||
	    echo "the init script is missing or names another file" \
		>>"$tmp/install"
	if grep -rl '/etc/graspd\.conf' "$dest/usr/local/share/man" \
	    >/dev/null 2>&1; then
		echo "a manual page names /etc/graspd.conf" >>"$tmp/install"
	fi
	grep -q '/etc/graspd/graspd\.conf' \
	    "$dest/usr/local/share/man/man5/graspd.conf.5" ||
	    echo "graspd.conf(5) does not name /etc/graspd/graspd.conf" \
		>>"$tmp/install"
	# An operator's file survives the next install.
	echo "log_level = debug" >"$conf"
	$inst install >/dev/null 2>&1
	[ "$(cat "$conf")" = "log_level = debug" ] ||
	    echo "a second install replaced the operator's file" \
		>>"$tmp/install"
	[ "$(cksum </etc/passwd)" = "$passwd_before" ] ||
	    echo "make install changed /etc/passwd" >>"$tmp/install"
	# uninstall removes what install put there, and keeps the
	# operator's configuration.
	mkdir -p "$dest/usr/local/share/other" && : >"$dest/usr/local/share/other/f"
	if ! $inst uninstall >"$tmp/out" 2>&1; then
		{ echo "make uninstall failed:"; cat "$tmp/out"; } \
		    >>"$tmp/install"
	fi
	(cd "$dest" && find . -type f | sort) >"$tmp/left"
	printf '%s\n' ./etc/graspd/graspd.conf ./usr/local/share/other/f \
	    >"$tmp/want"
	cmp -s "$tmp/left" "$tmp/want" ||
	    { echo "after make uninstall, files left:"; cat "$tmp/left"; } \
		>>"$tmp/install"
	verdict install "$tmp/install"
}

check_format
check_man
check_scripts
check_filemap
check_funclen
check_install
[ "$failed" -eq 0 ]
