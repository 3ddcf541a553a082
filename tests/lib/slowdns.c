/*
 * slowdns.c: the slow name server of the DNS tests (see slowdns.h).
 */
#define _GNU_SOURCE /* unshare */
#include <sys/mount.h>
#include <sys/socket.h>

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "slowdns.h"

#define SLOWDNS_NAMES	16
#define SLOWDNS_PENDING 256
#define SLOWDNS_NAMELEN 128
#define SLOWDNS_MSG	512

struct sd_name {
	char n_name[SLOWDNS_NAMELEN];
	int  n_delay;
	int  n_queries, n_answers;
};

struct sd_pending {
	int64_t		   p_due;
	struct sockaddr_in p_to;
	size_t		   p_len;
	unsigned char	   p_msg[SLOWDNS_MSG];
	int		   p_name; /* index, or -1 */
};

struct slowdns {
	char		  s_addr[32];
	int		  s_fd;
	volatile int	  s_stop;
	pthread_t	  s_thread;
	pthread_mutex_t	  s_mu;
	struct sd_name	  s_names[SLOWDNS_NAMES];
	int		  s_nnames;
	struct sd_pending s_pend[SLOWDNS_PENDING];
	int		  s_npend;
};

static int64_t
mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* The query's name, dotted and lowercase, and the end of its question;
 * 0 or -1. */
static int
parse_question(const unsigned char *m, size_t len, char *name, size_t *qend,
    unsigned *qtype)
{
	size_t i = 12, k = 0;

	while (i < len && m[i] != 0) {
		size_t l = m[i++], j;

		if (l > 63 || i + l > len || k + l + 2 > SLOWDNS_NAMELEN)
			return -1;
		if (k > 0)
			name[k++] = '.';
		for (j = 0; j < l; j++) {
			unsigned char c = m[i + j];

			name[k++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
		}
		i += l;
	}
	name[k] = '\0';
	if (i + 5 > len)
		return -1;
	*qtype = (unsigned)m[i + 1] << 8 | m[i + 2];
	*qend = i + 5;
	return 0;
}

/* The answer to the query m (len bytes) into out; its length or 0. */
static size_t
make_answer(const unsigned char *m, size_t len, unsigned char *out, int known,
    size_t qend, unsigned qtype)
{
	size_t n = qend;

	if (qend + 16 > SLOWDNS_MSG)
		return 0;
	memcpy(out, m, qend);
	out[2] = 0x81 | (m[2] & 0x01); /* QR, the query's RD */
	out[3] = known ? 0x80 : 0x83;  /* RA; NXDOMAIN if unknown */
	out[4] = 0;
	out[5] = 1;
	memset(out + 6, 0, 6);
	(void)len;
	if (known && qtype == 1) {
		static const unsigned char a[] = { 0xc0, 0x0c, 0, 1, 0, 1, 0, 0,
			0, 0, 0, 4, 127, 0, 0, 1 };

		out[7] = 1;
		memcpy(out + n, a, sizeof(a));
		n += sizeof(a);
	}
	return n;
}

static void
send_due(struct slowdns *s, int64_t now)
{
	int i;

	for (i = 0; i < s->s_npend;) {
		struct sd_pending *p = &s->s_pend[i];

		if (p->p_due > now) {
			i++;
			continue;
		}
		(void)sendto(s->s_fd, p->p_msg, p->p_len, 0,
		    (struct sockaddr *)&p->p_to, sizeof(p->p_to));
		if (p->p_name >= 0)
			s->s_names[p->p_name].n_answers++;
		*p = s->s_pend[--s->s_npend];
	}
}

static void *
serve(void *arg)
{
	struct slowdns	  *s = arg;
	unsigned char	   m[SLOWDNS_MSG];
	char		   name[SLOWDNS_NAMELEN];
	struct sockaddr_in from;
	socklen_t	   fl;
	struct pollfd	   pf;
	ssize_t		   r;
	size_t		   qend;
	unsigned	   qtype;
	int64_t		   now, next;
	int		   i, wait, known;

	while (!s->s_stop) {
		pthread_mutex_lock(&s->s_mu);
		now = mono_ms();
		send_due(s, now);
		next = now + 100;
		for (i = 0; i < s->s_npend; i++)
			if (s->s_pend[i].p_due < next)
				next = s->s_pend[i].p_due;
		pthread_mutex_unlock(&s->s_mu);
		wait = (int)(next - now);
		pf.fd = s->s_fd;
		pf.events = POLLIN;
		if (poll(&pf, 1, wait < 0 ? 0 : wait) <= 0)
			continue;
		fl = sizeof(from);
		r = recvfrom(s->s_fd, m, sizeof(m), 0, (struct sockaddr *)&from,
		    &fl);
		if (r < 12 ||
		    parse_question(m, (size_t)r, name, &qend, &qtype) == -1)
			continue;
		pthread_mutex_lock(&s->s_mu);
		for (i = 0; i < s->s_nnames; i++)
			if (strcmp(s->s_names[i].n_name, name) == 0)
				break;
		known = i < s->s_nnames;
		if (known)
			s->s_names[i].n_queries++;
		if ((!known || s->s_names[i].n_delay != SLOWDNS_NEVER) &&
		    s->s_npend < SLOWDNS_PENDING) {
			struct sd_pending *p = &s->s_pend[s->s_npend];

			p->p_len = make_answer(m, (size_t)r, p->p_msg, known,
			    qend, qtype);
			if (p->p_len > 0) {
				p->p_to = from;
				p->p_name = known ? i : -1;
				p->p_due = mono_ms() +
				    (known ? s->s_names[i].n_delay : 0);
				s->s_npend++;
			}
		}
		pthread_mutex_unlock(&s->s_mu);
	}
	return NULL;
}

/* Binds port 53 of a loopback address of our own; the fd or -1. */
static int
bind_server(char *addr, size_t addrlen)
{
	struct sockaddr_in sin;
	int		   fd, tries;
	unsigned	   base = (unsigned)getpid();

	for (tries = 0; tries < 32; tries++) {
		unsigned v = base + (unsigned)tries * 7919u;

		snprintf(addr, addrlen, "127.53.%u.%u", (v >> 8) & 0xff,
		    v % 254 + 1);
		if ((fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0)) == -1)
			return -1;
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons(53);
		inet_pton(AF_INET, addr, &sin.sin_addr);
		if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == 0)
			return fd;
		close(fd);
		if (errno != EADDRINUSE)
			return -1;
	}
	return -1;
}

struct slowdns *
slowdns_start(const char *dir, const char **why)
{
	struct slowdns *s;
	char		path[512];
	FILE	       *f;

	if (geteuid() != 0) {
		*why = "not root";
		return NULL;
	}
	if ((s = calloc(1, sizeof(*s))) == NULL) {
		*why = "out of memory";
		return NULL;
	}
	pthread_mutex_init(&s->s_mu, NULL);
	if ((s->s_fd = bind_server(s->s_addr, sizeof(s->s_addr))) == -1) {
		*why = "cannot bind a loopback port 53";
		free(s);
		return NULL;
	}
	snprintf(path, sizeof(path), "%s/resolv.conf", dir);
	if ((f = fopen(path, "w")) == NULL) {
		*why = "cannot write resolv.conf";
		goto fail;
	}
	fprintf(f, "nameserver %s\noptions timeout:30 attempts:1\n", s->s_addr);
	fclose(f);
	if (unshare(CLONE_NEWNS) == -1) {
		*why = "unshare(CLONE_NEWNS) failed";
		goto fail;
	}
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) == -1 ||
	    mount(path, "/etc/resolv.conf", NULL, MS_BIND, NULL) == -1) {
		*why = "cannot bind a resolv.conf over /etc/resolv.conf";
		goto fail;
	}
	if (pthread_create(&s->s_thread, NULL, serve, s) != 0) {
		*why = "cannot start the server thread";
		goto fail;
	}
	return s;
fail:
	close(s->s_fd);
	free(s);
	return NULL;
}

void
slowdns_add(struct slowdns *s, const char *name, int delay_ms)
{
	int i;

	pthread_mutex_lock(&s->s_mu);
	for (i = 0; i < s->s_nnames; i++)
		if (strcmp(s->s_names[i].n_name, name) == 0)
			break;
	if (i < SLOWDNS_NAMES) {
		if (i == s->s_nnames) {
			snprintf(s->s_names[i].n_name,
			    sizeof(s->s_names[i].n_name), "%s", name);
			s->s_nnames++;
		}
		s->s_names[i].n_delay = delay_ms;
	}
	pthread_mutex_unlock(&s->s_mu);
}

static int
count(struct slowdns *s, const char *name, int answers)
{
	int i, n = 0;

	pthread_mutex_lock(&s->s_mu);
	for (i = 0; i < s->s_nnames; i++)
		if (strcmp(s->s_names[i].n_name, name) == 0)
			n = answers ? s->s_names[i].n_answers :
				      s->s_names[i].n_queries;
	pthread_mutex_unlock(&s->s_mu);
	return n;
}

int
slowdns_queries(struct slowdns *s, const char *name)
{
	return count(s, name, 0);
}

int
slowdns_answers(struct slowdns *s, const char *name)
{
	return count(s, name, 1);
}

const char *
slowdns_addr(const struct slowdns *s)
{
	return s->s_addr;
}

void
slowdns_stop(struct slowdns *s)
{
	if (s == NULL)
		return;
	s->s_stop = 1;
	pthread_join(s->s_thread, NULL);
	close(s->s_fd);
	pthread_mutex_destroy(&s->s_mu);
	free(s);
}
