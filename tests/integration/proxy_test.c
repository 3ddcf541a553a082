/*
 * proxy_test.c: graspd deployed as operators deploy relays, behind
 * Debian's nginx with TLS (issue 45).  The shipped etc/nginx/graspd.conf,
 * its ports, certificate and upstream changed to the test's, runs on
 * loopback in front of a relayd that trusts it (trusted_proxies =
 * 127.0.0.1, one websocket per address); its commented stream {} variant
 * runs in front of a second relayd with proxy_protocol on.  nginx runs
 * with -p and -c in a temporary directory, never touching /etc/nginx;
 * a self-signed certificate is made with openssl(1).
 *
 * The clients speak TLS through a small tunnel of this file: a plain
 * loopback port whose connections it carries to nginx over TLS from a
 * source address of its own (127.0.0.2 or 127.0.0.3; Linux routes all of
 * 127/8 to lo), so the test's plain websocket and HTTP clients are wss://
 * and https:// clients from two addresses through one nginx.  Git talks
 * https to nginx itself (GIT_SSL_NO_VERIFY).
 *
 * Without nginx or openssl every case is reported skipped; the raw cases
 * (X-Forwarded-For and PROXY headers written by hand) run anyway.
 */
#define _GNU_SOURCE
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/ssl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "buf.h"
#include "client.h"
#include "ctl.h"
#include "event.h"
#include "gitutil.h"
#include "nip19.h"
#include "nostr.h"
#include "relayproc.h"
#include "t.h"
#include "tdir.h"
#include "tint_prog.h"
#include "wsclient.h"

#define TMO	    5000
/* Byte 0 of this test's keys (tint_key()). */
#define KEY0	    0x45
/* How long nginx has to listen. */
#define NGINX_UP_MS 10000
#define TUN_BUF	    16384

static char		 tmp[256];
static struct relayproc *rx;  /* trusted_proxies: X-Forwarded-For */
static struct relayproc *rpp; /* the same with proxy_protocol */
static pid_t		 nginx_pid = -1;
static int		 https_port;  /* nginx http {} with TLS */
static int		 stream_port; /* nginx stream {} with TLS */
static int		 have_nginx;
static SSL_CTX		*tls;

/* A plain port carried over TLS to nginx from the address t_src. */
struct tun {
	int	  t_lfd;
	int	  t_port;  /* the plain side */
	int	  t_dport; /* nginx's */
	char	  t_src[16];
	pthread_t t_th;
};

/* [0] 127.0.0.2 and [1] 127.0.0.3 to https_port, [2] [3] to stream. */
static struct tun tuns[4];

struct tun_conn {
	struct tun *tc_tun;
	int	    tc_fd;
};

static int
write_all(int fd, const void *p, size_t n)
{
	const char *c = p;
	ssize_t	    w;

	while (n > 0) {
		if ((w = write(fd, c, n)) == -1) {
			if (errno == EINTR)
				continue;
			return -1;
		}
		c += w;
		n -= (size_t)w;
	}
	return 0;
}

/* A TCP connection from src (an address of lo) to 127.0.0.1:port. */
static int
connect_from(const char *src, int port)
{
	struct sockaddr_in sa;
	int		   fd;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	inet_pton(AF_INET, src, &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		goto fail;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	sa.sin_port = htons((uint16_t)port);
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) == -1)
		goto fail;
	return fd;
fail:
	close(fd);
	return -1;
}

/* Carries one accepted plain connection over TLS until either side ends. */
static void *
tun_conn(void *arg)
{
	struct tun_conn *tc = arg;
	struct pollfd	 pfd[2];
	SSL		*ssl = NULL;
	char		 buf[TUN_BUF];
	int		 fd, n;

	if ((fd = connect_from(tc->tc_tun->t_src, tc->tc_tun->t_dport)) == -1)
		goto done;
	if ((ssl = SSL_new(tls)) == NULL || SSL_set_fd(ssl, fd) != 1 ||
	    SSL_connect(ssl) != 1)
		goto done;
	for (;;) {
		pfd[0].fd = tc->tc_fd;
		pfd[0].events = POLLIN;
		pfd[1].fd = fd;
		pfd[1].events = POLLIN;
		if (SSL_pending(ssl) == 0 && poll(pfd, 2, 1000) <= 0)
			continue;
		if (SSL_pending(ssl) > 0 ||
		    (pfd[1].revents & (POLLIN | POLLHUP))) {
			/* A TLS 1.3 session ticket is no data (no
			 * SSL_MODE_AUTO_RETRY: it does not block). */
			if ((n = SSL_read(ssl, buf, sizeof(buf))) <= 0) {
				if (SSL_get_error(ssl, n) ==
				    SSL_ERROR_WANT_READ)
					continue;
				break;
			}
			if (write_all(tc->tc_fd, buf, (size_t)n) == -1)
				break;
		}
		if (pfd[0].revents & (POLLIN | POLLHUP)) {
			if ((n = (int)read(tc->tc_fd, buf, sizeof(buf))) <= 0)
				break;
			if (SSL_write(ssl, buf, n) != n)
				break;
		}
	}
done:
	if (ssl != NULL)
		SSL_free(ssl);
	if (fd != -1)
		close(fd);
	close(tc->tc_fd);
	free(tc);
	return NULL;
}

static void *
tun_accept(void *arg)
{
	struct tun	*t = arg;
	struct tun_conn *tc;
	pthread_t	 th;
	int		 fd;

	while ((fd = accept4(t->t_lfd, NULL, NULL, SOCK_CLOEXEC)) != -1) {
		if ((tc = calloc(1, sizeof(*tc))) == NULL) {
			close(fd);
			continue;
		}
		tc->tc_tun = t;
		tc->tc_fd = fd;
		if (pthread_create(&th, NULL, tun_conn, tc) != 0) {
			close(fd);
			free(tc);
			continue;
		}
		pthread_detach(th);
	}
	return NULL;
}

static int
tun_start(struct tun *t, const char *src, int dport)
{
	struct sockaddr_in sa;
	socklen_t	   salen = sizeof(sa);

	snprintf(t->t_src, sizeof(t->t_src), "%s", src);
	t->t_dport = dport;
	if ((t->t_lfd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (bind(t->t_lfd, (struct sockaddr *)&sa, sizeof(sa)) == -1 ||
	    listen(t->t_lfd, 16) == -1 ||
	    getsockname(t->t_lfd, (struct sockaddr *)&sa, &salen) == -1)
		return -1;
	t->t_port = ntohs(sa.sin_port);
	return pthread_create(&t->t_th, NULL, tun_accept, t) == 0 ? 0 : -1;
}

/* Runs a shell command line; 0 if it exited 0. */
static int
run(const char *cmd)
{
	int st = system(cmd);

	return st != -1 && WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -1;
}

/* A free port of 127.0.0.1, closed again (nginx binds it). */
static int
free_port(void)
{
	struct sockaddr_in sa;
	socklen_t	   salen = sizeof(sa);
	int		   fd, port = -1;

	if ((fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0)) == -1)
		return -1;
	memset(&sa, 0, sizeof(sa));
	sa.sin_family = AF_INET;
	inet_pton(AF_INET, "127.0.0.1", &sa.sin_addr);
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sa, &salen) == 0)
		port = ntohs(sa.sin_port);
	close(fd);
	return port;
}

/* Replaces every from in b's text with to. */
static void
subst(struct buf *b, const char *from, const char *to)
{
	struct buf  out = BUF_INIT;
	const char *p, *q;

	buf_adds(&out, "");
	for (p = b->b_data; (q = strstr(p, from)) != NULL;
	     p = q + strlen(from)) {
		buf_add(&out, p, (size_t)(q - p));
		buf_adds(&out, to);
	}
	buf_adds(&out, p);
	buf_reset(b);
	buf_adds(b, out.b_data);
	buf_free(&out);
}

/* The nginx binary ($GRASPD_NGINX if set; "" is none), or NULL. */
static const char *
nginx_bin(void)
{
	static const char *const where[] = { "/usr/sbin/nginx",
		"/usr/local/sbin/nginx", "/usr/bin/nginx" };
	const char		*env = getenv("GRASPD_NGINX");
	size_t			 i;

	if (env != NULL)
		return *env != '\0' && access(env, X_OK) == 0 ? env : NULL;

	for (i = 0; i < sizeof(where) / sizeof(where[0]); i++)
		if (access(where[i], X_OK) == 0)
			return where[i];
	return NULL;
}

/* The shipped file's certificate and key, the test's instead. */
static void
subst_cert(struct buf *b)
{
	char s[512];

	snprintf(s, sizeof(s), "%s/cert.pem", tmp);
	subst(b, "/etc/letsencrypt/live/git.example.org/fullchain.pem", s);
	snprintf(s, sizeof(s), "%s/key.pem", tmp);
	subst(b, "/etc/letsencrypt/live/git.example.org/privkey.pem", s);
}

/*
 * Writes DIR/nginx.conf: the shipped server blocks with the test's
 * ports, certificate and relayd, and its commented stream {} variant,
 * uncommented, in front of rpp.
 */
static int
nginx_conf(void)
{
	struct buf  site = BUF_INIT, stream = BUF_INIT, conf = BUF_INIT;
	const char *src = getenv("GRASPD_SRCDIR");
	char	    path[512], s[256], *text = NULL, *p, *q;
	FILE	   *fp;
	int	    rc = -1;

	snprintf(path, sizeof(path), "%s/etc/nginx/graspd.conf",
	    src ? src : ".");
	if ((text = t_slurp(path, NULL)) == NULL) {
		printf("# %s: %s\n", path, strerror(errno));
		return -1;
	}
	if ((p = strstr(text, "# stream {")) == NULL)
		goto done;
	buf_adds(&stream, "");
	/* Each line without its "# " or "#". */
	for (q = p; *q != '\0';) {
		if (q[0] == '#')
			q += q[1] == ' ' ? 2 : 1;
		while (*q != '\0' && *q != '\n')
			buf_addc(&stream, *q++);
		if (*q == '\n')
			buf_addc(&stream, *q++);
	}
	*p = '\0';
	buf_adds(&site, text);

	snprintf(s, sizeof(s), "server 127.0.0.1:%d;", relayproc_port(rx));
	subst(&site, "server 127.0.0.1:7334;", s);
	snprintf(s, sizeof(s), "listen 127.0.0.1:%d ssl;", https_port);
	subst(&site, "listen 443 ssl;", s);
	snprintf(s, sizeof(s), "listen 127.0.0.1:%d;", free_port());
	subst(&site, "listen 80;", s);
	subst(&site, "listen [::]:80;", "");
	subst(&site, "listen [::]:443 ssl;", "");
	subst_cert(&site);
	snprintf(s, sizeof(s), "proxy_pass 127.0.0.1:%d;", relayproc_port(rpp));
	subst(&stream, "proxy_pass 127.0.0.1:7334;", s);
	snprintf(s, sizeof(s), "listen 127.0.0.1:%d ssl;", stream_port);
	subst(&stream, "listen 443 ssl;", s);
	subst_cert(&stream);

	buf_adds(&conf, "");
	buf_printf(&conf,
	    "%sdaemon off;\nworker_processes 1;\npid %s/nginx.pid;\n"
	    "error_log %s/error.log info;\n"
	    "load_module /usr/lib/nginx/modules/ngx_stream_module.so;\n"
	    "events { worker_connections 256; }\n",
	    geteuid() == 0 ? "user root;\n" : "", tmp, tmp);
	buf_adds(&conf, stream.b_data);
	buf_printf(&conf,
	    "http {\naccess_log %s/access.log;\n"
	    "client_body_temp_path %s/body;\nproxy_temp_path %s/proxy;\n"
	    "fastcgi_temp_path %s/fcgi;\nuwsgi_temp_path %s/uwsgi;\n"
	    "scgi_temp_path %s/scgi;\n",
	    tmp, tmp, tmp, tmp, tmp, tmp);
	buf_adds(&conf, site.b_data);
	buf_adds(&conf, "}\n");
	snprintf(path, sizeof(path), "%s/nginx.conf", tmp);
	if ((fp = fopen(path, "w")) == NULL)
		goto done;
	fputs(conf.b_data, fp);
	rc = fclose(fp) == 0 ? 0 : -1;
done:
	if (rc == -1)
		printf("# cannot adapt etc/nginx/graspd.conf\n");
	free(text);
	buf_free(&site);
	buf_free(&stream);
	buf_free(&conf);
	return rc;
}

static void
nginx_log_tail(void)
{
	char cmd[600];

	snprintf(cmd, sizeof(cmd), "tail -n 20 %s/error.log | sed 's/^/# /'",
	    tmp);
	if (system(cmd) == -1)
		return;
}

static int
nginx_start(const char *bin)
{
	char	conf[512], prefix[512], pidfile[512];
	int64_t until;
	int	fd;

	snprintf(conf, sizeof(conf), "%s/nginx.conf", tmp);
	snprintf(prefix, sizeof(prefix), "%s/", tmp);
	snprintf(pidfile, sizeof(pidfile), "%s/nginx.pid", tmp);
	unlink(pidfile);
	if ((nginx_pid = fork()) == -1)
		return -1;
	if (nginx_pid == 0) {
		char log[600];

		snprintf(log, sizeof(log), "%s/error.log", tmp);
		execl(bin, "nginx", "-p", prefix, "-c", conf, "-e", log,
		    (char *)NULL);
		_exit(127);
	}
	for (until = wsc_now_ms() + NGINX_UP_MS; wsc_now_ms() < until;) {
		/* nginx writes it once its sockets are bound: a port that
		 * answers before is another program's. */
		if (access(pidfile, F_OK) == 0 &&
		    (fd = wsc_tcp_connect("127.0.0.1", https_port, 500)) !=
			-1) {
			close(fd);
			if ((fd = wsc_tcp_connect("127.0.0.1", stream_port,
				 500)) != -1) {
				close(fd);
				return 0;
			}
		}
		if (waitpid(nginx_pid, NULL, WNOHANG) == nginx_pid) {
			nginx_pid = -1;
			break;
		}
		relayproc_sleep_ms(50);
	}
	printf("# nginx did not listen\n");
	nginx_log_tail();
	return -1;
}

static int
setup(void)
{
	const char *xff_env[] = { "NGIT_TRUSTED_PROXIES=127.0.0.1",
		"NGIT_MAX_CONNECTIONS_PER_IP=1", "NGIT_MAX_PENDING_PER_IP=1",
		NULL };
	const char *pp_env[] = { "NGIT_TRUSTED_PROXIES=127.0.0.1",
		"NGIT_PROXY_PROTOCOL=true", "NGIT_MAX_CONNECTIONS_PER_IP=1",
		"NGIT_HEADER_TIMEOUT=1", NULL };
	const char *bin = nginx_bin();
	char	    cmd[1024], home[300];
	int	    i, st;

	if (tdir_make(tmp, sizeof(tmp), "proxy") == -1)
		return 1;
	snprintf(home, sizeof(home), "%s/home", tmp);
	if (gt_setup(home) == -1)
		return 1;
	if ((rx = relayproc_start("relayd", xff_env)) == NULL ||
	    (rpp = relayproc_start("relayd", pp_env)) == NULL)
		return 1;
	if (bin == NULL) {
		printf("# SKIP nginx not installed (scripts/deps.sh --test "
		       "installs it): the cases through nginx are skipped\n");
		return 0;
	}
	snprintf(cmd, sizeof(cmd),
	    "openssl req -x509 -newkey ec -pkeyopt "
	    "ec_paramgen_curve:prime256v1 -nodes -days 1 -subj /CN=localhost "
	    "-keyout %s/key.pem -out %s/cert.pem >%s/openssl.log 2>&1",
	    tmp, tmp, tmp);
	if (run(cmd) == -1) {
		printf("# SKIP openssl could not make a certificate\n");
		return 0;
	}
	/* A port another test took meanwhile: again on others. */
	for (i = 0;; i++) {
		https_port = free_port();
		stream_port = free_port();
		if (https_port != stream_port && nginx_conf() == 0 &&
		    nginx_start(bin) == 0)
			break;
		if (nginx_pid != -1)
			relayproc_terminate(&nginx_pid, &st, 5000, "nginx");
		if (i == 2)
			return 1;
	}
	if ((tls = SSL_CTX_new(TLS_client_method())) == NULL)
		return 1;
	/* The test's own self-signed certificate. */
	SSL_CTX_set_verify(tls, SSL_VERIFY_NONE, NULL);
	SSL_CTX_clear_mode(tls, SSL_MODE_AUTO_RETRY);
	for (i = 0; i < 4; i++)
		if (tun_start(&tuns[i], i % 2 ? "127.0.0.3" : "127.0.0.2",
			i < 2 ? https_port : stream_port) == -1)
			return 1;
	have_nginx = 1;
	return 0;
}

static void
cleanup(void)
{
	int st;

	if (nginx_pid != -1) {
		relayproc_terminate(&nginx_pid, &st, 5000, "nginx");
		if (t_fail > 0)
			nginx_log_tail();
	}
	if (t_fail > 0) {
		if (rx != NULL)
			relayproc_dump_log(rx, 30);
		if (rpp != NULL)
			relayproc_dump_log(rpp, 30);
	}
	relayproc_free(rx);
	relayproc_free(rpp);
	if (getenv("GRASPD_KEEP_TMP") == NULL)
		tdir_remove(tmp);
}

/* 1 if the case can run, else its SKIP line is printed. */
static int
need_nginx(const char *name)
{
	if (have_nginx)
		return 1;
	printf("# %s: SKIP without nginx\n", name);
	return 0;
}

/* A websocket through tunnel t; NULL, its HTTP status in *status. */
static struct wsc *
ws_via(const struct tun *t, int *status)
{
	*status = 0;
	return wsc_connect_ex("127.0.0.1", t->t_port, "/", NULL, TMO, status);
}

/*
 * The value of the first metric line of rp that starts with name and
 * holds label (NULL: any), asked with a PROXY header when rp wants one
 * (rpp); -1 if it cannot be read.
 */
static double
metric(struct relayproc *rp, const char *name, const char *label)
{
	static const char req[] =
	    "PROXY TCP4 127.0.0.250 127.0.0.1 1 1\r\n"
	    "GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n";
	struct buf    b = BUF_INIT;
	struct pollfd pfd;
	char	      part[4096], *line, *next, *sp;
	double	      v = -1;
	ssize_t	      n;
	int64_t	      until = wsc_now_ms() + TMO;
	int	      fd;

	if ((fd = connect_from("127.0.0.1", relayproc_port(rp))) == -1)
		return -1;
	if (rp != rpp)
		n = write_all(fd, req + strcspn(req, "\n") + 1,
		    strlen(req + strcspn(req, "\n") + 1));
	else
		n = write_all(fd, req, sizeof(req) - 1);
	while (n == 0 && wsc_now_ms() < until) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		if ((n = read(fd, part, sizeof(part))) <= 0)
			break;
		buf_add(&b, part, (size_t)n);
		n = 0;
	}
	close(fd);
	buf_addc(&b, '\0');
	for (line = b.b_data; line != NULL; line = next) {
		if ((next = strchr(line, '\n')) != NULL)
			*next++ = '\0';
		if (strncmp(line, name, strlen(name)) != 0 ||
		    (label != NULL && strstr(line, label) == NULL) ||
		    (sp = strrchr(line, ' ')) == NULL)
			continue;
		v = strtod(sp + 1, NULL);
		break;
	}
	buf_free(&b);
	return v;
}

/* Waits until relayd rp has n websockets open; 0, or -1. */
static int
wait_conns(struct relayproc *rp, int n)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (metric(rp, "graspd_relay_connections_active", NULL) == n)
			return 0;
		relayproc_sleep_ms(100);
	}
	return -1;
}

static void
test_wss_clients_publish_and_subscribe_through_nginx(void)
{
	struct event *e;
	struct wsc   *pub = NULL, *sub = NULL;
	char	      f[128], **evs = NULL, *ev;
	size_t	      n;
	int	      ok = 0, st;

	if (!need_nginx(__func__))
		return;
	T_ASSERT((sub = ws_via(&tuns[1], &st)) != NULL);
	T_ASSERT((pub = ws_via(&tuns[0], &st)) != NULL);
	/* A grasp list: what any key may publish here. */
	T_ASSERT((e = tint_signed(KEY0, 1, time(NULL), 10317,
		      "[[\"g\",\"wss://example.org\"]]", "")) != NULL);
	snprintf(f, sizeof(f), "{\"authors\":[\"%s\"]}", e->pubkey_hex);
	T_CHECK(nostr_req(sub, "live", f, TMO, &evs, &n, NULL) == 0 && n == 0);
	nostr_events_free(evs);
	T_CHECK(nostr_publish(pub, e, TMO, &ok, NULL) == 0 && ok == 1);
	ev = nostr_wait_event(sub, "live", TMO, NULL);
	T_CHECK(ev != NULL && strstr(ev, e->id_hex) != NULL);
	free(ev);
	event_destroy(e);
	wsc_close(pub);
	wsc_close(sub);
	T_CHECK(wait_conns(rx, 0) == 0);
}

static void
test_each_client_address_gets_its_own_budget(void)
{
	struct wsc *a = NULL, *a2 = NULL, *b = NULL;
	char	   *log;
	int	    st;

	if (!need_nginx(__func__))
		return;
	/* max_connections_per_ip = 1, counted by the forwarded address. */
	T_ASSERT((a = ws_via(&tuns[0], &st)) != NULL);
	T_CHECK(wait_conns(rx, 1) == 0);
	a2 = ws_via(&tuns[0], &st);
	printf("# a second websocket from 127.0.0.2: HTTP %d\n", st);
	T_CHECK(a2 == NULL && st == 429);
	b = ws_via(&tuns[1], &st);
	printf("# a websocket from 127.0.0.3 meanwhile: HTTP %d\n", st);
	T_CHECK(b != NULL);
	T_CHECK(ctl_metric(rx,
		    "graspd_relay_connections_refused_total"
		    "{role=\"relayd\",reason=\"per_ip\"}") == 1);
	log = t_slurp(relayproc_log_path(rx), NULL);
	T_CHECK(log != NULL &&
	    strstr(log, "refusing a websocket from 127.0.0.2") != NULL);
	free(log);
	if (a2 != NULL)
		wsc_close(a2);
	if (b != NULL)
		wsc_close(b);
	wsc_close(a);
	T_CHECK(wait_conns(rx, 0) == 0);
}

static void
test_nip11_and_pages_load_through_nginx(void)
{
	char *body = NULL, *hdrs = NULL;
	int   st = 0;

	if (!need_nginx(__func__))
		return;
	T_CHECK(http_get("127.0.0.1", tuns[0].t_port, "/",
		    "Accept: application/nostr+json\r\n", TMO, &st, &hdrs,
		    &body) == 0);
	T_EQ_INT(st, 200);
	T_CHECK(body != NULL && strstr(body, "\"supported_nips\"") != NULL);
	free(body);
	free(hdrs);
	body = hdrs = NULL;
	T_CHECK(http_get("127.0.0.1", tuns[1].t_port, "/", NULL, TMO, &st,
		    &hdrs, &body) == 0);
	T_EQ_INT(st, 200);
	T_CHECK(body != NULL && strstr(body, "<html") != NULL);
	free(body);
	free(hdrs);
}

static void
test_git_clones_and_pushes_over_https(void)
{
	uint8_t sk[SECKEY_LEN], pk[PUBKEY_LEN];
	char	work[400], clone[400], url[512], npub[NIP19_KEY_BUFSZ], oid[41],
	    *out = NULL;
	struct wsc *ws;

	if (!need_nginx(__func__))
		return;
	tint_key(KEY0, 2, sk);
	event_pubkey_of(sk, pk);
	snprintf(work, sizeof(work), "%s/work", tmp);
	snprintf(clone, sizeof(clone), "%s/clone", tmp);
	T_ASSERT(
	    client_host_repo(rx, sk, time(NULL), "viaproxy", NULL, work) == 0);
	T_ASSERT(nip19_encode("npub", pk, npub, sizeof(npub)) == 0);
	snprintf(url, sizeof(url), "https://127.0.0.1:%d/%s/viaproxy.git",
	    https_port, npub);
	setenv("GIT_SSL_NO_VERIFY", "1", 1);
	T_CHECK(gt_git(NULL, &out, "clone", "-q", url, clone, NULL) == 0);
	if (out != NULL && *out != '\0')
		printf("# git clone: %s\n", out);
	free(out);
	out = NULL;
	T_ASSERT(gt_commit(clone, "second", "pushed through nginx\n", "second",
		     oid) == 0);
	T_ASSERT((ws = wsc_connect(relayproc_host(rx), relayproc_port(rx), "/",
		      TMO)) != NULL);
	T_CHECK(gt_state(ws, sk, time(NULL) + 1, "viaproxy", oid) == 0);
	wsc_close(ws);
	T_CHECK(gt_git(clone, &out, "push", "-q", url, "main", NULL) == 0);
	if (out != NULL && *out != '\0')
		printf("# git push: %s\n", out);
	free(out);
	out = NULL;
	/* What the push stored comes back on a fresh clone. */
	snprintf(clone, sizeof(clone), "%s/clone2", tmp);
	T_CHECK(gt_git(NULL, NULL, "clone", "-q", url, clone, NULL) == 0);
	snprintf(clone + strlen(clone), sizeof(clone) - strlen(clone),
	    "/second");
	T_CHECK(access(clone, F_OK) == 0);
	unsetenv("GIT_SSL_NO_VERIFY");
	T_CHECK(wait_conns(rx, 0) == 0);
}

static void
test_proxy_protocol_through_nginx_stream(void)
{
	struct wsc *a = NULL, *a2 = NULL, *b = NULL;
	char	   *body = NULL;
	int	    st;

	if (!need_nginx(__func__))
		return;
	T_ASSERT((a = ws_via(&tuns[2], &st)) != NULL);
	T_CHECK(wait_conns(rpp, 1) == 0);
	a2 = ws_via(&tuns[2], &st);
	printf("# a second websocket from 127.0.0.2: HTTP %d\n", st);
	T_CHECK(a2 == NULL && st == 429);
	b = ws_via(&tuns[3], &st);
	printf("# a websocket from 127.0.0.3 meanwhile: HTTP %d\n", st);
	T_CHECK(b != NULL);
	T_CHECK(http_get("127.0.0.1", tuns[3].t_port, "/",
		    "Accept: application/nostr+json\r\n", TMO, &st, NULL,
		    &body) == 0 &&
	    st == 200);
	free(body);
	if (a2 != NULL)
		wsc_close(a2);
	if (b != NULL)
		wsc_close(b);
	wsc_close(a);
	T_CHECK(wait_conns(rpp, 0) == 0);
}

/* The websocket handshake after hdr (n bytes) from src to rp. */
static struct wsc *
ws_raw(struct relayproc *rp, const char *src, const void *hdr, size_t n,
    const char *extra, int *status)
{
	int fd;

	*status = 0;
	if ((fd = connect_from(src, relayproc_port(rp))) == -1)
		return NULL;
	if (n > 0 && write_all(fd, hdr, n) == -1) {
		close(fd);
		return NULL;
	}
	return wsc_handshake(fd, "127.0.0.1", relayproc_port(rp), "/", extra,
	    TMO, status);
}

static void
test_forwarded_header_counts_only_from_a_trusted_proxy(void)
{
	struct wsc *a, *b, *c;
	int	    st;

	/* From the proxy: each named client is its own address. */
	a = ws_raw(rx, "127.0.0.1", NULL, 0,
	    "X-Forwarded-For: 6.6.6.6, 127.0.0.7\r\n", &st);
	T_CHECK(a != NULL);
	b = ws_raw(rx, "127.0.0.1", NULL, 0, "X-Forwarded-For: 127.0.0.8\r\n",
	    &st);
	T_CHECK(b != NULL);
	c = ws_raw(rx, "127.0.0.1", NULL, 0,
	    "X-Forwarded-For: 127.0.0.1\r\nX-Forwarded-For: 127.0.0.7\r\n",
	    &st);
	printf("# a second websocket of 127.0.0.7 (two headers): HTTP %d\n",
	    st);
	T_CHECK(c == NULL && st == 429);
	if (c != NULL)
		wsc_close(c);
	/* A malformed one from the proxy is refused. */
	c = ws_raw(rx, "127.0.0.1", NULL, 0, "X-Forwarded-For: nonsense\r\n",
	    &st);
	printf("# a malformed X-Forwarded-For: HTTP %d\n", st);
	T_CHECK(c == NULL && st == 400);
	if (c != NULL)
		wsc_close(c);
	if (a != NULL)
		wsc_close(a);
	if (b != NULL)
		wsc_close(b);
	T_CHECK(wait_conns(rx, 0) == 0);
	/* From anyone else it is ignored: no way out of one's budget. */
	a = ws_raw(rx, "127.0.0.4", NULL, 0, "X-Forwarded-For: 127.0.0.9\r\n",
	    &st);
	T_CHECK(a != NULL);
	b = ws_raw(rx, "127.0.0.4", NULL, 0, "X-Forwarded-For: 127.0.0.10\r\n",
	    &st);
	printf("# a second websocket of 127.0.0.4 naming another: HTTP %d\n",
	    st);
	T_CHECK(b == NULL && st == 429);
	if (b != NULL)
		wsc_close(b);
	if (a != NULL)
		wsc_close(a);
	T_CHECK(wait_conns(rx, 0) == 0);
}

/* A PROXY v2 header naming src (IPv4) as the client. */
static size_t
v2_header(uint8_t out[28], const char *src)
{
	static const uint8_t sig[12] = { 0x0d, 0x0a, 0x0d, 0x0a, 0x00, 0x0d,
		0x0a, 0x51, 0x55, 0x49, 0x54, 0x0a };

	memcpy(out, sig, 12);
	out[12] = 0x21; /* version 2, PROXY */
	out[13] = 0x11; /* TCP over IPv4 */
	out[14] = 0;
	out[15] = 12;
	inet_pton(AF_INET, src, out + 16);
	inet_pton(AF_INET, "127.0.0.1", out + 20);
	out[24] = 0x9c, out[25] = 0x40;
	out[26] = 0x01, out[27] = 0xbb;
	return 28;
}

/*
 * Caddy and HAProxy keep upstream connections open and send requests of
 * several clients down one: each request's header counts, not the
 * first's.  Two requests on one connection from the proxy, the second
 * with a malformed header: that one is refused.
 */
static void
test_kept_alive_connection_reads_each_requests_header(void)
{
	static const char two[] =
	    "GET / HTTP/1.1\r\nHost: x\r\nAccept: application/nostr+json\r\n"
	    "X-Forwarded-For: 127.0.0.11\r\n\r\n"
	    "GET / HTTP/1.1\r\nHost: x\r\nAccept: application/nostr+json\r\n"
	    "X-Forwarded-For: 127.0.0.11, bogus\r\nConnection: close\r\n\r\n";
	struct buf    b = BUF_INIT;
	struct pollfd pfd;
	char	      part[4096], *first, *second;
	ssize_t	      n;
	int64_t	      until = wsc_now_ms() + TMO;
	int	      fd;

	T_ASSERT((fd = connect_from("127.0.0.1", relayproc_port(rx))) != -1);
	T_ASSERT(write_all(fd, two, sizeof(two) - 1) == 0);
	while (wsc_now_ms() < until) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 200) <= 0)
			continue;
		if ((n = read(fd, part, sizeof(part))) <= 0)
			break;
		buf_add(&b, part, (size_t)n);
	}
	close(fd);
	buf_addc(&b, '\0');
	first = strstr(b.b_data, "HTTP/1.1 ");
	second = first != NULL ? strstr(first + 1, "HTTP/1.1 ") : NULL;
	printf("# answers: %.12s, %.12s\n", first ? first : "none",
	    second ? second : "none");
	T_CHECK(first != NULL && strncmp(first, "HTTP/1.1 200", 12) == 0);
	T_CHECK(second != NULL && strncmp(second, "HTTP/1.1 400", 12) == 0);
	buf_free(&b);
}

static void
test_proxy_protocol_v1_and_v2_headers_name_the_client(void)
{
	static const char v1a[] =
	    "PROXY TCP4 127.0.0.5 127.0.0.1 40000 443\r\n";
	static const char v1b[] =
	    "PROXY TCP4 127.0.0.6 127.0.0.1 40001 443\r\n";
	static const char bad[] = "PROXY TCP4 127.0.0.5 nowhere 1 2\r\n";
	struct wsc	 *a, *b, *c;
	uint8_t		  v2[28];
	int		  st;

	/* v2 then v1 naming one client: its one websocket, then 429. */
	a = ws_raw(rpp, "127.0.0.1", v2, v2_header(v2, "127.0.0.5"), NULL, &st);
	T_CHECK(a != NULL);
	b = ws_raw(rpp, "127.0.0.1", v1a, sizeof(v1a) - 1, NULL, &st);
	printf("# a second websocket of 127.0.0.5 (v1): HTTP %d\n", st);
	T_CHECK(b == NULL && st == 429);
	if (b != NULL)
		wsc_close(b);
	c = ws_raw(rpp, "127.0.0.1", v1b, sizeof(v1b) - 1, NULL, &st);
	T_CHECK(c != NULL);
	/* A malformed header, and none at all: closed unanswered. */
	b = ws_raw(rpp, "127.0.0.1", bad, sizeof(bad) - 1, NULL, &st);
	T_CHECK(b == NULL && st == 0);
	b = ws_raw(rpp, "127.0.0.1", NULL, 0, NULL, &st);
	T_CHECK(b == NULL && st == 0);
	/* A good header from an address that is not a trusted proxy. */
	b = ws_raw(rpp, "127.0.0.4", v1b, sizeof(v1b) - 1, NULL, &st);
	T_CHECK(b == NULL && st == 0);
	T_CHECK(metric(rpp, "graspd_relay_connections_refused_total",
		    "reason=\"proxy_header\"") >= 3);
	if (c != NULL)
		wsc_close(c);
	if (a != NULL)
		wsc_close(a);
	T_CHECK(wait_conns(rpp, 0) == 0);
}

/* A proxy that stops halfway through the header is closed in time. */
static void
test_partial_proxy_header_times_out(void)
{
	static const char part[] = "PROXY TCP4 127.0.0.5 127.0.0.1 4";
	struct pollfd	  pfd;
	char		  c;
	int64_t		  t0 = wsc_now_ms(), ended = -1;
	int		  fd;

	T_ASSERT((fd = connect_from("127.0.0.1", relayproc_port(rpp))) != -1);
	T_ASSERT(write_all(fd, part, sizeof(part) - 1) == 0);
	while (wsc_now_ms() - t0 < 5000) {
		pfd.fd = fd;
		pfd.events = POLLIN;
		if (poll(&pfd, 1, 100) <= 0)
			continue;
		if (read(fd, &c, 1) <= 0) {
			ended = wsc_now_ms() - t0;
			break;
		}
	}
	close(fd);
	printf("# closed after %lld ms (header_timeout 1 s)\n",
	    (long long)ended);
	T_CHECK(ended >= 0 && ended < 4000);
}

/* graspd -n of the environment env; its output in out (caller frees). */
static int
check_config(const char *env, char **out)
{
	const char *bin = getenv("GRASPD_BIN");
	struct buf  b = BUF_INIT;
	char	    cmd[1024], line[512];
	FILE	   *fp;
	int	    st;

	snprintf(cmd, sizeof(cmd),
	    "env %s NGIT_RELAY_DATA_PATH=%s/relay-n %s/graspd -n 2>&1", env,
	    tmp, bin ? bin : "bin");
	buf_adds(&b, "");
	if ((fp = popen(cmd, "r")) == NULL)
		return -1;
	while (fgets(line, sizeof(line), fp) != NULL)
		buf_adds(&b, line);
	st = pclose(fp);
	*out = strdup(b.b_data);
	buf_free(&b);
	return st;
}

static void
test_check_warns_of_a_proxy_it_does_not_trust(void)
{
	char *out = NULL;

	/* The shape of the shipped deployment, trusted_proxies missing. */
	T_CHECK(check_config("NGIT_BIND_ADDRESS=127.0.0.1:7334 "
			     "NGIT_PUBLIC_URL=https://git.example.org",
		    &out) == 0);
	T_CHECK(out != NULL && strstr(out, "set trusted_proxies") != NULL);
	free(out);
	T_CHECK(check_config("NGIT_BIND_ADDRESS=127.0.0.1:7334 "
			     "NGIT_PUBLIC_URL=https://git.example.org "
			     "NGIT_TRUSTED_PROXIES=127.0.0.1",
		    &out) == 0);
	T_CHECK(out != NULL && strstr(out, "trusted_proxies") == NULL);
	free(out);
}

static const struct t_case cases[] = {
	T_CASE(test_wss_clients_publish_and_subscribe_through_nginx),
	T_CASE(test_each_client_address_gets_its_own_budget),
	T_CASE(test_nip11_and_pages_load_through_nginx),
	T_CASE(test_git_clones_and_pushes_over_https),
	T_CASE(test_proxy_protocol_through_nginx_stream),
	T_CASE(test_forwarded_header_counts_only_from_a_trusted_proxy),
	T_CASE(test_kept_alive_connection_reads_each_requests_header),
	T_CASE(test_proxy_protocol_v1_and_v2_headers_name_the_client),
	T_CASE(test_partial_proxy_header_times_out),
	T_CASE(test_check_warns_of_a_proxy_it_does_not_trust),
};

T_MAIN_WITH(cases, setup, cleanup, T_IGN_SIGPIPE)
