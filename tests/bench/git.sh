#!/bin/sh
# tests/bench/git.sh: the git serving benchmark (`make bench` runs it after
# run.sh unless BENCH_NO_GIT=1).  graspd beside what a user would run
# instead: git-http-backend behind nginx and fcgiwrap (Debian packages;
# sh scripts/deps.sh --bench installs them), on the same repository.
#
# Builds nothing: it needs $BIN/graspd and its roles and
# $O/tests/bench/gitserve.  Generates a bare repository of BENCH_GIT_COMMITS
# (10000) commits whose pack is about BENCH_GIT_MIB (100) MiB of random
# bytes (fixed seed, so every run gets the same one), starts a full graspd
# on a free loopback port in a temporary directory, announces the
# repository there (announcement and state signed by gitserve) and pushes
# it (timed: push_graspd_*); starts fcgiwrap and nginx, as this user, with
# a configuration, pid file, logs and temporary paths of the temporary
# directory, serving graspd's copy of the repository through
# git-http-backend, and times the same push into an empty repository there
# (receive-pack enabled: push_nginx_*).  Then, BENCH_GIT_ROUNDS (2) times,
# alternating which server goes first: BENCH_GIT_CLIENTS (16) concurrent
# clones through each, then as many concurrent fetches of the last 100
# commits by clients holding the rest (clones sharing the objects of a
# repository cut 100 commits short).  Each figure: total time, p50 and p99
# per client, the CPU the server's processes and their children took
# (from /proc: utime+stime+cutime+cstime), and the peak PSS of the server's
# process tree sampled every 50 ms; the median over the rounds and
# graspd's ratio to nginx.  BENCH_GIT_NO_CLONES=1 leaves the clones out
# (more rounds of fetches in the same time).
#
# Then maintenance: a graspd with git maintenance off takes
# BENCH_GIT_PUSHES (1000) small pushes into one repository; the time of a
# clone (median of 3) and the number of packs, then the same graspd is
# restarted with maintenance after every push, one more push triggers it,
# and once graspd_git_maintenance_total says it ran, the same figures
# again.
#
# Prints "figure value unit" lines and appends them to $O/bench.json's
# figures when run.sh wrote it (git_bench.txt beside it either way).
# Figures only: it never passes or fails on time, only when something
# breaks.  The whole run is bounded by the timeouts of its steps (about
# 20 minutes on a loaded 2-core machine).
set -eu

COMMITS=${BENCH_GIT_COMMITS:-10000}
MIB=${BENCH_GIT_MIB:-100}
CLIENTS=${BENCH_GIT_CLIENTS:-16}
ROUNDS=${BENCH_GIT_ROUNDS:-2}
PUSHES=${BENCH_GIT_PUSHES:-1000}
BACKEND=/usr/lib/git-core/git-http-backend

top=$(cd "$(dirname "$0")/../.." && pwd)
cd "$top"
# shellcheck source=tests/lib/tproc_shell.sh
. "$top/tests/lib/tproc_shell.sh"
tproc_dirs
gs=$O/tests/bench/gitserve
tproc_require bench "$graspd" "$gs"
for c in nginx fcgiwrap curl; do
	if ! command -v "$c" >/dev/null 2>&1 &&
	    [ ! -x "/usr/sbin/$c" ]; then
		echo "# bench: $c is missing (sh scripts/deps.sh --bench);" \
		    "no git serving figures" >&2
		exit 0
	fi
done
[ -x "$BACKEND" ] || { echo "# bench: no $BACKEND" >&2; exit 0; }
PATH=$PATH:/usr/sbin

tmp=$(mktemp -d "${TMPDIR:-/tmp}/graspd-git.XXXXXX")
HOME=$tmp/home
export HOME
mkdir -p "$HOME"
gpid=""
fpid=""
npid=""

stop_all() {
	[ -z "$gpid" ] || tproc_stop bench graspd "$gpid" 20
	[ -z "$npid" ] || tproc_stop bench nginx "$npid" 10
	[ -z "$fpid" ] || tproc_stop bench fcgiwrap "$fpid" 10
	gpid=""
	npid=""
	fpid=""
}
cleanup() {
	stop_all
	tproc_rmtmp bench "$tmp"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

fail() {
	tproc_fail bench "$*" "$tmp/gd/graspd.log" "$tmp/gd2/graspd.log" \
	    "$tmp/nginx/error.log" "$tmp/fcgiwrap.log"
}

# start_graspd DIR PORT [NAME=VALUE...]: a full graspd, limits off.
start_graspd() {
	_d=$1
	_p=$2
	shift 2
	# shellcheck disable=SC2086  # TPROC_NO_LIMITS is a list
	tproc_spawn "$_d" "$_p" "$_d/graspd.log" $TPROC_NO_LIMITS \
	    NGIT_MAX_PUSH_BYTES=0 NGIT_MAX_REPO_BYTES=0 \
	    NGIT_MAX_GIT_REQUESTS_PER_IP=0 NGIT_MAX_PENDING_PER_IP=0 "$@" \
	    "$graspd" -d
	gpid=$!
	"$O/tests/bench/ingest" waitport 127.0.0.1 "$_p" 120000 ||
	    fail "graspd is not listening on port $_p after 120 s"
}

echo "# bench: generating $COMMITS commits, about $MIB MiB"
timeout 600 "$gs" gen "$tmp/src.git" "$COMMITS" "$MIB" >"$tmp/figures" ||
    fail "gitserve gen failed"
git init -q --bare "$tmp/base.git"
timeout 600 git --git-dir="$tmp/src.git" push -q "$tmp/base.git" \
    refs/heads/base:refs/heads/main || fail "cannot make the fetch base"
tip=$(git --git-dir="$tmp/src.git" rev-parse main)

gport=$("$O/tests/bench/ingest" freeport) || fail "no free loopback port"
start_graspd "$tmp/gd" "$gport"
url=$(timeout 60 "$gs" announce 127.0.0.1 "$gport" bench "$tip") ||
    fail "cannot announce the repository"
repo=$tmp/gd/git/${url#http://*/}
echo "# bench: pushing $MIB MiB to graspd on 127.0.0.1:$gport"
timeout 900 "$gs" load push_graspd 1 "$gpid" -- git \
    --git-dir="$tmp/src.git" push -q "$url" main:refs/heads/main \
    >>"$tmp/figures" || fail "push to graspd failed"

# nginx (as this user: workers of a root master switch to "user"),
# fcgiwrap and git-http-backend, everything under $tmp.
nport=$("$O/tests/bench/ingest" freeport) || fail "no free loopback port"
mkdir -p "$tmp/nginx" "$tmp/www"
ln -s "$repo" "$tmp/www/r.git"
git init -q --bare "$tmp/www/push.git"
git --git-dir="$tmp/www/push.git" config http.receivepack true
user=""
[ "$(id -u)" -ne 0 ] || user="user $(id -un) $(id -gn);"
cat >"$tmp/nginx/nginx.conf" <<EOF
$user
daemon off;
worker_processes 2;
pid $tmp/nginx/nginx.pid;
error_log $tmp/nginx/error.log;
events { worker_connections 1024; }
http {
	access_log off;
	client_body_temp_path $tmp/nginx/body;
	proxy_temp_path $tmp/nginx/proxy;
	fastcgi_temp_path $tmp/nginx/fastcgi;
	uwsgi_temp_path $tmp/nginx/uwsgi;
	scgi_temp_path $tmp/nginx/scgi;
	client_max_body_size 0;
	server {
		listen 127.0.0.1:$nport;
		location / {
			fastcgi_pass unix:$tmp/fcgi.sock;
			fastcgi_param SCRIPT_FILENAME $BACKEND;
			fastcgi_param GIT_PROJECT_ROOT $tmp/www;
			fastcgi_param GIT_HTTP_EXPORT_ALL "";
			fastcgi_param PATH_INFO \$uri;
			fastcgi_param QUERY_STRING \$query_string;
			fastcgi_param REQUEST_METHOD \$request_method;
			fastcgi_param CONTENT_TYPE \$content_type;
			fastcgi_param CONTENT_LENGTH \$content_length;
			fastcgi_param HTTP_CONTENT_ENCODING \$http_content_encoding;
			fastcgi_param GIT_PROTOCOL \$http_git_protocol;
			fastcgi_param REMOTE_ADDR \$remote_addr;
			fastcgi_param REMOTE_USER bench;
		}
	}
}
EOF
fcgiwrap -c "$CLIENTS" -s "unix:$tmp/fcgi.sock" >"$tmp/fcgiwrap.log" 2>&1 &
fpid=$!
nginx -p "$tmp/nginx" -c "$tmp/nginx/nginx.conf" -e "$tmp/nginx/error.log" &
npid=$!
"$O/tests/bench/ingest" waitport 127.0.0.1 "$nport" 10000 ||
    fail "nginx is not listening on $nport"
nurl=http://127.0.0.1:$nport/r.git
echo "# bench: pushing $MIB MiB to nginx + git-http-backend"
timeout 900 "$gs" load push_nginx 1 "$npid,$fpid" -- git \
    --git-dir="$tmp/src.git" push -q "http://127.0.0.1:$nport/push.git" \
    main:refs/heads/main >>"$tmp/figures" || fail "push to nginx failed"
rm -rf "$tmp/www/push.git"

# run KIND SERVER ROUND: CLIENTS clones or fetches through SERVER.
run() {
	if [ "$2" = graspd ]; then
		u=$url
		p=$gpid
	else
		u=$nurl
		p=$npid,$fpid
	fi
	rm -rf "$tmp/c"
	mkdir -p "$tmp/c"
	if [ "$1" = clone ]; then
		timeout 900 "$gs" load "clone_$2" "$CLIENTS" "$p" -- git clone \
		    -q --bare "$u" "$tmp/c/%d" >"$tmp/r.$1.$2.$3" ||
		    fail "clones through $2 failed"
	else
		i=0
		while [ "$i" -lt "$CLIENTS" ]; do
			git clone -q --bare --shared "$tmp/base.git" \
			    "$tmp/c/$i"
			i=$((i + 1))
		done
		timeout 900 "$gs" load "fetch_$2" "$CLIENTS" "$p" -- git \
		    --git-dir="$tmp/c/%d" fetch -q "$u" \
		    +refs/heads/main:refs/heads/main >"$tmp/r.$1.$2.$3" ||
		    fail "fetches through $2 failed"
	fi
	rm -rf "$tmp/c"
	sed 's/^/# /' "$tmp/r.$1.$2.$3"
}

r=1
while [ "$r" -le "$ROUNDS" ]; do
	if [ $((r % 2)) -eq 1 ]; then a=graspd b=nginx; else a=nginx b=graspd; fi
	if [ -z "${BENCH_GIT_NO_CLONES:-}" ]; then
		echo "# bench: round $r: $CLIENTS clones, $a first"
		run clone "$a" "$r"
		run clone "$b" "$r"
	fi
	echo "# bench: round $r: $CLIENTS fetches of $COMMITS-100..$COMMITS," \
	    "$b first"
	run fetch "$b" "$r"
	run fetch "$a" "$r"
	r=$((r + 1))
done
# Medians over the rounds, then graspd / nginx.
cat "$tmp"/r.* | awk '
{ v[$1] = v[$1] " " $2; u[$1] = $3 }
END {
	for (k in v) {
		n = split(substr(v[k], 2), a, " ")
		for (i = 1; i <= n; i++) for (j = i + 1; j <= n; j++)
			if (a[j] < a[i]) { t = a[i]; a[i] = a[j]; a[j] = t }
		m = n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
		printf "%s %.3f %s\n", k, m, u[k]
	}
}' | sort >"$tmp/med"
cat "$tmp/med" >>"$tmp/figures"
awk '{ split($1, f, "_"); k = f[1] "_" f[3] "_" f[4]
    s = f[2]; if (f[5] != "") k = k "_" f[5]; x[s, k] = $2; ks[k] = 1 }
    END { for (k in ks) if (x["nginx", k] > 0 && x["graspd", k] > 0) {
    r = x["graspd", k] / x["nginx", k]
    printf "ratio_graspd_nginx_%s %.3f ratio\n", k, r } }' \
    "$tmp/figures" | sort >"$tmp/ratios"
cat "$tmp/ratios" >>"$tmp/figures"
stop_all

# Maintenance: BENCH_GIT_PUSHES small pushes, maintenance off, then on.
if [ "$PUSHES" -gt 0 ]; then
	mport=$("$O/tests/bench/ingest" freeport) || fail "no free port"
	start_graspd "$tmp/gd2" "$mport" NGIT_GIT_MAINTENANCE_PUSHES=0
	git init -q -b main "$tmp/work"
	echo start >"$tmp/work/pushes.txt"
	git -C "$tmp/work" add pushes.txt
	git -C "$tmp/work" -c user.name=b -c user.email=b@graspd.invalid \
	    commit -q -m start
	murl=$(timeout 60 "$gs" announce 127.0.0.1 "$mport" many \
	    "$(git -C "$tmp/work" rev-parse HEAD)") || fail "announce failed"
	git -C "$tmp/work" push -q "$murl" main || fail "first push failed"
	echo "# bench: $PUSHES small pushes, maintenance off"
	timeout 1200 "$gs" pushes 127.0.0.1 "$mport" many "$tmp/work" \
	    "$PUSHES" >>"$tmp/figures" || fail "the pushes failed"
	mrepo=$tmp/gd2/git/${murl#http://*/}
	# clones TAG: three clones one after another, the median's time.
	clones() {
		for i in 1 2 3; do
			rm -rf "$tmp/mc"
			timeout 600 "$gs" load "mclone" 1 "$gpid" -- git clone \
			    -q --bare "$murl" "$tmp/mc" | awk '$1 == \
			    "mclone_total_s" { print $2 }'
		done | sort -n | sed -n 2p | awk -v t="$1" \
		    '{ print "maint_clone_" t "_s", $1, "s" }' >>"$tmp/figures"
		rm -rf "$tmp/mc"
		echo "maint_packs_$1 $(find "$mrepo/objects/pack" \
		    -name '*.pack' | wc -l) packs" >>"$tmp/figures"
		echo "maint_loose_$1 $(find "$mrepo/objects" -type f \
		    -path "$mrepo/objects/[0-9a-f][0-9a-f]/*" | wc -l)" \
		    "objects" >>"$tmp/figures"
	}
	clones before
	tproc_stop bench graspd "$gpid" 20
	gpid=""
	start_graspd "$tmp/gd2" "$mport" NGIT_GIT_MAINTENANCE_PUSHES=1
	t0=$(date +%s)
	timeout 120 "$gs" pushes 127.0.0.1 "$mport" many "$tmp/work" 1 \
	    >/dev/null || fail "the push after the restart failed"
	timeout 900 "$gs" metric 127.0.0.1 "$mport" \
	    'graspd_git_maintenance_total{role="relayd",status="success"}' 1 890000 \
	    >/dev/null || fail "maintenance did not run"
	echo "maint_run_s $(($(date +%s) - t0)) s" >>"$tmp/figures"
	clones after
	stop_all
fi

printf '%-36s %12s  %s\n' figure value unit
awk '$2 ~ /^[0-9.]+$/ { printf "%-36s %12s  %s\n", $1, $2, $3 }' \
    "$tmp/figures"
mkdir -p "$O"
cp "$tmp/figures" "$O/git_bench.txt"
if [ -f "$O/bench.json" ]; then
	# The figures go into bench.json's object, before its closing braces.
	head -n -2 "$O/bench.json" >"$tmp/bench.json"
	awk '$2 ~ /^[0-9.]+$/ { printf ",\n    \"%s\": {\"value\": %s, " \
	    "\"unit\": \"%s\"}", $1, $2, $3 } END { printf "\n  }\n}\n" }' \
	    "$tmp/figures" >>"$tmp/bench.json"
	mv "$tmp/bench.json" "$O/bench.json"
fi
echo "# bench: git figures in $O/git_bench.txt"
