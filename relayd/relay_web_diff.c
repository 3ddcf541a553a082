/*
 * relay_web_diff.c: the pure part of relayd's git pages: the checks of a
 * ref name and a path taken from a URL, and git diffs as HTML (run in
 * relayd's loop, on text a peer wrote: a patch event's content or git's
 * output for a pushed commit).  A single pass reads the text line by
 * line as a state machine (text, a file's header, a hunk, a binary
 * patch) and renders the files into one buffer while it counts their
 * lines; the summary and the list of files, which come first on the
 * page, are written once the pass is done.  Nothing in the text is
 * trusted: hunk counts that lie, lines without a newline, NULs and
 * lines of megabytes give escaped, bounded output.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "relay_web_diff.h"

/* The diff's own styles: the page's stylesheet need not know them. */
#define DIFF_CSS \
	".diff table{border-collapse:collapse;width:100%;background:#fff;" \
	"border:1px solid #dde3e0;border-radius:0 0 8px 8px}" \
	".diff td{padding:0 8px;border:0;font:12.5px/1.5 ui-monospace," \
	"'DejaVu Sans Mono',Menlo,monospace;white-space:pre-wrap;" \
	"overflow-wrap:anywhere;vertical-align:top;tab-size:4}" \
	".diff td.ln{width:1%;color:#8a969b;text-align:right;white-space:" \
	"nowrap;user-select:none;border-right:1px solid #edf0ee}" \
	".diff tr.da td{background:#e6f6ea}.diff tr.dr td{background:" \
	"#fbe9e9}.diff tr.dh td{background:#eef2f0;color:#4a585e}" \
	".diff tr.dm td{color:#5b6a70}.diff .dfn{margin:18px 0 0;padding:" \
	"7px 12px;background:#eef2f0;border:1px solid #dde3e0;border-" \
	"bottom:0;border-radius:8px 8px 0 0;font-weight:600;overflow-wrap:" \
	"anywhere}.diff .ad{color:#1d7a3a}.diff .rm{color:#a32b2b}" \
	".diff .cut{color:#8a969b;font-style:italic}" \
	".diff pre.dmsg{white-space:pre-wrap;overflow-wrap:anywhere;" \
	"background:#fff;border:1px solid #dde3e0;border-radius:8px;" \
	"padding:10px 14px}.diff ol{padding-left:22px}"

#define FFFD "\xef\xbf\xbd"
/* The bytes a caller's id prefix may hold (it goes into id="..."). */
#define ID_CHARS \
	"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-"

enum diff_state {
	DS_TEXT,   /* outside any file: mail headers, messages, trailers */
	DS_HEAD,   /* a file's extended header lines, before a hunk */
	DS_HUNK,   /* inside a hunk whose counts are not used up */
	DS_AFTER,  /* a file after a hunk: another hunk, or the end */
	DS_BINARY, /* a "GIT binary patch": skipped to the next file */
};

struct diff_file {
	char  *df_name;
	size_t df_added, df_removed;
	int    df_binary;
};

struct diff {
	struct buf	  d_pre;  /* the text before the first file */
	struct buf	  d_body; /* the files */
	struct buf	  d_text; /* a text block being gathered */
	struct diff_file *d_files;
	size_t		  d_nfiles, d_cap;
	size_t		  d_added, d_removed, d_lines, d_hidden;
	unsigned long	  d_old, d_new;		  /* the next line numbers */
	unsigned long	  d_old_left, d_new_left; /* the hunk's counts */
	int		  d_table;		  /* a file's table is open */
	int		  d_cut;
	enum diff_state	  d_state;
	const char	 *d_id;
};

int
relay_web_ref_ok(const char *s, size_t n)
{
	const char *seg = s, *p, *e = s + n;

	if (n == 0 || n > RELAY_WEB_REF_MAX || s[0] == '-' || s[0] == '/' ||
	    s[n - 1] == '/' || s[n - 1] == '.' || (n == 1 && s[0] == '@'))
		return 0;
	for (p = s; p < e; p++) {
		if ((unsigned char)*p < 0x20 || *p == 0x7f ||
		    strchr(" ~^:?*[\\", *p) != NULL)
			return 0;
		if (p + 1 < e &&
		    ((p[0] == '.' && p[1] == '.') ||
			(p[0] == '@' && p[1] == '{') ||
			(p[0] == '/' && p[1] == '/')))
			return 0;
		if (p == seg && *p == '.')
			return 0;
		if (p + 1 == e || p[1] == '/') {
			if (p + 1 - seg >= 5 && memcmp(p - 4, ".lock", 5) == 0)
				return 0;
			seg = p + 2;
		}
	}
	return 1;
}

int
relay_web_path_ok(const char *s, size_t n)
{
	const char *p, *e = s + n, *seg = s;

	if (n > RELAY_WEB_PATH_MAX ||
	    (n > 0 && (s[0] == '/' || s[n - 1] == '/')))
		return 0;
	for (p = s; p <= e; p++) {
		if (p < e && *p != '/') {
			if ((unsigned char)*p < 0x20 || *p == 0x7f)
				return 0;
			continue;
		}
		if (n > 0 &&
		    (p == seg || (p - seg == 1 && seg[0] == '.') ||
			(p - seg == 2 && seg[0] == '.' && seg[1] == '.')))
			return 0;
		seg = p + 1;
	}
	return 1;
}

void
relay_web_diff_style(struct buf *b)
{
	buf_adds(b, "<style>" DIFF_CSS "</style>\n");
}

int
relay_web_is_binary(const char *s, size_t len)
{
	return memchr(s, '\0',
		   len < RELAY_DIFF_SNIFF ? len : RELAY_DIFF_SNIFF) != NULL;
}

void
relay_web_code_escape(struct buf *b, const char *s, size_t len)
{
	const char *e = s + len, *run = s;
	const char *rep;

	for (; s < e; s++) {
		switch (*s) {
		case '<':
			rep = "&lt;";
			break;
		case '>':
			rep = "&gt;";
			break;
		case '&':
			rep = "&amp;";
			break;
		case '"':
			rep = "&quot;";
			break;
		case '\'':
			rep = "&#39;";
			break;
		case '\r':
			rep = s + 1 < e && s[1] == '\n' ? "" : FFFD;
			break;
		default:
			if ((unsigned char)*s >= 0x20 && *s != 0x7f)
				continue;
			if (*s == '\t' || *s == '\n')
				continue;
			rep = FFFD;
		}
		buf_add(b, run, (size_t)(s - run));
		buf_adds(b, rep);
		run = s + 1;
	}
	buf_add(b, run, (size_t)(e - run));
}

/* n bytes of s, at most RELAY_DIFF_LINE_MAX of them, and a note if cut. */
static void
line_text(struct buf *b, const char *s, size_t n)
{
	size_t k = n;

	if (k > RELAY_DIFF_LINE_MAX) {
		k = RELAY_DIFF_LINE_MAX;
		/* Not in the middle of a UTF-8 sequence. */
		while (k > 0 && ((unsigned char)s[k] & 0xc0) == 0x80)
			k--;
	}
	relay_web_code_escape(b, s, k);
	if (k < n)
		buf_printf(b,
		    "<span class=\"cut\">&hellip; (%zu more bytes)"
		    "</span>",
		    n - k);
}

/* Whether another row may be rendered; else it is counted as hidden. */
static int
room(struct diff *d)
{
	if (d->d_lines < RELAY_DIFF_LINES_MAX &&
	    d->d_pre.b_len + d->d_body.b_len + d->d_text.b_len <
		RELAY_DIFF_HTML_MAX &&
	    d->d_nfiles <= RELAY_DIFF_FILES_MAX)
		return 1;
	d->d_hidden++;
	d->d_cut = 1;
	return 0;
}

/* The text gathered so far, as a block of the page. */
static void
text_flush(struct diff *d)
{
	struct buf *out = d->d_nfiles == 0 ? &d->d_pre : &d->d_body;

	/* Blank lines alone (git show's before its diff) make no block. */
	if (strspn(d->d_text.b_data ? d->d_text.b_data : "", "\n") ==
	    d->d_text.b_len) {
		buf_reset(&d->d_text);
		return;
	}
	buf_adds(out, "<pre class=\"dmsg\">");
	buf_add(out, d->d_text.b_data, d->d_text.b_len);
	buf_adds(out, "</pre>\n");
	buf_reset(&d->d_text);
}

static void
text_line(struct diff *d, const char *s, size_t n)
{
	if (!room(d))
		return;
	d->d_lines++;
	line_text(&d->d_text, s, n);
	buf_addc(&d->d_text, '\n');
}

static void
table_close(struct diff *d)
{
	if (d->d_table)
		buf_adds(&d->d_body, "</table>\n");
	d->d_table = 0;
}

/* One row: its class, the old and new line numbers (0: none), text. */
static void
row(struct diff *d, const char *cls, unsigned long o, unsigned long n,
    const char *s, size_t len)
{
	struct buf *b = &d->d_body;

	if (!room(d))
		return;
	d->d_lines++;
	if (!d->d_table) {
		buf_adds(b, "<table>\n");
		d->d_table = 1;
	}
	buf_printf(b, "<tr class=\"%s\"><td class=\"ln\">", cls);
	if (o)
		buf_printf(b, "%lu", o);
	buf_adds(b, "</td><td class=\"ln\">");
	if (n)
		buf_printf(b, "%lu", n);
	buf_adds(b, "</td><td>");
	line_text(b, s, len);
	buf_adds(b, "</td></tr>\n");
}

/* A file's name from "a/x" or "b/x" as git writes it; "" stays "". */
static char *
name_dup(const char *s, size_t n)
{
	char *p;

	if (n >= 2 && (s[0] == 'a' || s[0] == 'b') && s[1] == '/') {
		s += 2;
		n -= 2;
	}
	if (n > RELAY_DIFF_NAME_MAX)
		n = RELAY_DIFF_NAME_MAX;
	if ((p = strndup(s, n)) == NULL)
		fatal("relay_web_diff");
	return p;
}

/* The file being read. */
static struct diff_file *
cur(struct diff *d)
{
	return &d->d_files[d->d_nfiles > RELAY_DIFF_FILES_MAX ?
		RELAY_DIFF_FILES_MAX :
		d->d_nfiles - 1];
}

/* A new file, named by name (n bytes, a/ or b/ dropped). */
static void
file_open(struct diff *d, const char *name, size_t n)
{
	struct diff_file *f;

	text_flush(d);
	table_close(d);
	if (d->d_nfiles == d->d_cap && d->d_nfiles <= RELAY_DIFF_FILES_MAX) {
		d->d_cap = d->d_cap ? 2 * d->d_cap : 16;
		if ((d->d_files = reallocarray(d->d_files, d->d_cap,
			 sizeof(*d->d_files))) == NULL)
			fatal("relay_web_diff");
	}
	/* Past the last file listed, one entry is reused for the rest. */
	if (d->d_nfiles > RELAY_DIFF_FILES_MAX)
		free(cur(d)->df_name);
	d->d_nfiles++;
	f = cur(d);
	memset(f, 0, sizeof(*f));
	f->df_name = name_dup(name, n);
	d->d_state = DS_HEAD;
	if (d->d_nfiles > RELAY_DIFF_FILES_MAX) {
		d->d_cut = 1;
		return;
	}
	buf_printf(&d->d_body, "<div class=\"dfn\" id=\"%s-%zu\">", d->d_id,
	    d->d_nfiles);
	relay_web_code_escape(&d->d_body, f->df_name, strlen(f->df_name));
	buf_adds(&d->d_body, "</div>\n");
}

/* The name a "--- x" or "+++ x" line gives, unless /dev/null. */
static void
file_rename(struct diff *d, const char *s, size_t n)
{
	struct diff_file *f = cur(d);

	/* git ends a name with a space with a tab; drop what follows it. */
	if (memchr(s, '\t', n) != NULL)
		n = (size_t)((const char *)memchr(s, '\t', n) - s);
	if (n == 9 && memcmp(s, "/dev/null", 9) == 0)
		return;
	free(f->df_name);
	f->df_name = name_dup(s, n);
}

/* The name of "diff --git a/x b/y": y, after the last " b/". */
static void
file_git(struct diff *d, const char *s, size_t n)
{
	const char *p, *b = NULL;

	for (p = s; p + 3 <= s + n; p++)
		if (memcmp(p, " b/", 3) == 0)
			b = p + 1;
	if (b == NULL)
		b = s;
	file_open(d, b, n - (size_t)(b - s));
}

/* An unsigned decimal at *pp, or 0 (none); *pp moves past it. */
static unsigned long
num(const char **pp, const char *e)
{
	unsigned long v = 0;
	const char   *p = *pp;

	while (p < e && *p >= '0' && *p <= '9' && v < 100000000UL)
		v = v * 10 + (unsigned long)(*p++ - '0');
	*pp = p;
	return v;
}

/*
 * "@@ -o[,on] +n[,nn] @@...": the hunk's start lines and counts into d.
 * 0, or -1 when the line is not such a header.
 */
static int
hunk_header(struct diff *d, const char *s, size_t len)
{
	const char   *p, *e = s + len;
	unsigned long o, on = 1, n, nn = 1;

	if (len < 10 || memcmp(s, "@@ -", 4) != 0)
		return -1;
	p = s + 4;
	o = num(&p, e);
	if (p < e && *p == ',') {
		p++;
		on = num(&p, e);
	}
	if (p + 2 > e || p[0] != ' ' || p[1] != '+')
		return -1;
	p += 2;
	n = num(&p, e);
	if (p < e && *p == ',') {
		p++;
		nn = num(&p, e);
	}
	if (p + 3 > e || memcmp(p, " @@", 3) != 0)
		return -1;
	d->d_old = o ? o : 1;
	d->d_new = n ? n : 1;
	d->d_old_left = on;
	d->d_new_left = nn;
	return 0;
}

/* A line of a hunk, or of a file after one whose counts ran out. */
static void
hunk_line(struct diff *d, const char *s, size_t n)
{
	struct diff_file *f = cur(d);
	char		  c = n ? s[0] : ' ';

	switch (c) {
	case '+':
		f->df_added++;
		d->d_added++;
		row(d, "da", 0, d->d_new++, s, n);
		if (d->d_new_left)
			d->d_new_left--;
		break;
	case '-':
		f->df_removed++;
		d->d_removed++;
		row(d, "dr", d->d_old++, 0, s, n);
		if (d->d_old_left)
			d->d_old_left--;
		break;
	case '\\':
		row(d, "dm", 0, 0, s, n);
		break;
	default:
		row(d, "dc", d->d_old++, d->d_new++, s, n);
		if (d->d_old_left)
			d->d_old_left--;
		if (d->d_new_left)
			d->d_new_left--;
	}
	if (d->d_state == DS_HUNK && d->d_old_left == 0 && d->d_new_left == 0)
		d->d_state = DS_AFTER;
}

#define STARTS(s, n, lit) \
	((n) >= sizeof(lit) - 1 && memcmp((s), (lit), sizeof(lit) - 1) == 0)

/* A line, without its newline (and a carriage return before it). */
static void
line(struct diff *d, const char *s, size_t n, const char *next, size_t left)
{
	if (STARTS(s, n, "diff --git ")) {
		file_git(d, s + 11, n - 11);
		return;
	}
	switch (d->d_state) {
	case DS_HUNK:
		if (n == 0 || strchr(" +-\\", s[0]) != NULL) {
			hunk_line(d, s, n);
			return;
		}
		/* The counts lied: what follows is read afresh. */
		d->d_state = DS_AFTER;
		/* FALLTHROUGH */
	case DS_AFTER:
		if (hunk_header(d, s, n) == 0) {
			row(d, "dh", 0, 0, s, n);
			d->d_state = DS_HUNK;
			return;
		}
		if (n > 0 && s[0] == '\\') {
			row(d, "dm", 0, 0, s, n);
			return;
		}
		d->d_state = DS_TEXT;
		break;
	case DS_HEAD:
		if (hunk_header(d, s, n) == 0) {
			row(d, "dh", 0, 0, s, n);
			d->d_state = DS_HUNK;
		} else if (STARTS(s, n, "--- ") || STARTS(s, n, "+++ ")) {
			file_rename(d, s + 4, n - 4);
		} else if (STARTS(s, n, "GIT binary patch") ||
		    (STARTS(s, n, "Binary files ") && n > 7 &&
			memcmp(s + n - 7, " differ", 7) == 0)) {
			cur(d)->df_binary = 1;
			row(d, "dm", 0, 0, "Binary file, not shown", 22);
			d->d_state = DS_BINARY;
		} else
			row(d, "dm", 0, 0, s, n);
		return;
	case DS_BINARY:
		/* Its base85 lines, up to the next file. */
		return;
	case DS_TEXT:
		break;
	}
	/* A plain unified diff: "--- x" then "+++ y" starts a file. */
	if (STARTS(s, n, "--- ") && left >= 4 && memcmp(next, "+++ ", 4) == 0) {
		file_open(d, "", 0);
		file_rename(d, s + 4, n - 4);
		return;
	}
	table_close(d);
	text_line(d, s, n);
}

void
relay_web_diff(struct buf *b, const char *text, size_t len, const char *id,
    struct relay_diff_stat *st)
{
	struct diff d;
	const char *p = text, *e = text + len, *nl, *s;
	size_t	    i, n;

	memset(&d, 0, sizeof(d));
	d.d_id =
	    id != NULL && *id && strspn(id, ID_CHARS) == strlen(id) ? id : "d";
	while (p < e) {
		if ((nl = memchr(p, '\n', (size_t)(e - p))) == NULL)
			nl = e;
		s = p;
		n = (size_t)(nl - p);
		if (n > 0 && p[n - 1] == '\r')
			n--;
		p = nl < e ? nl + 1 : e;
		line(&d, s, n, p, (size_t)(e - p));
	}
	text_flush(&d);
	table_close(&d);

	buf_adds(b, "<div class=\"diff\">");
	relay_web_diff_style(b);
	buf_add(b, d.d_pre.b_data, d.d_pre.b_len);
	buf_printf(b,
	    "<p class=\"dsum\">%zu file%s changed, <span class=\"ad\">+%zu"
	    "</span> <span class=\"rm\">&minus;%zu</span></p>\n",
	    d.d_nfiles, d.d_nfiles == 1 ? "" : "s", d.d_added, d.d_removed);
	if (d.d_nfiles > 0) {
		buf_adds(b, "<ol class=\"dfiles\">\n");
		for (i = 0; i < d.d_nfiles && i < RELAY_DIFF_FILES_MAX; i++) {
			buf_printf(b, "<li><a href=\"#%s-%zu\">", d.d_id,
			    i + 1);
			relay_web_code_escape(b, d.d_files[i].df_name,
			    strlen(d.d_files[i].df_name));
			if (d.d_files[i].df_binary)
				buf_adds(b,
				    "</a> <span class=\"cut\">binary"
				    "</span></li>\n");
			else
				buf_printf(b,
				    "</a> <span class=\"ad\">+%zu</span> "
				    "<span class=\"rm\">&minus;%zu</span>"
				    "</li>\n",
				    d.d_files[i].df_added,
				    d.d_files[i].df_removed);
		}
		buf_adds(b, "</ol>\n");
	}
	if (d.d_nfiles > RELAY_DIFF_FILES_MAX)
		buf_printf(b,
		    "<p class=\"cut\">%zu more files are not listed.</p>\n",
		    d.d_nfiles - RELAY_DIFF_FILES_MAX);
	buf_add(b, d.d_body.b_data, d.d_body.b_len);
	if (d.d_cut)
		buf_printf(b,
		    "<p class=\"cut\" id=\"%s-cut\">The diff is cut here: %zu "
		    "more line%s not shown.</p>\n",
		    d.d_id, d.d_hidden, d.d_hidden == 1 ? " is" : "s are");
	buf_adds(b, "</div>\n");
	if (st != NULL) {
		st->ds_files = d.d_nfiles;
		st->ds_added = d.d_added;
		st->ds_removed = d.d_removed;
		st->ds_lines = d.d_lines;
		st->ds_cut = d.d_cut;
	}
	for (i = 0; i < d.d_nfiles && i <= RELAY_DIFF_FILES_MAX; i++)
		free(d.d_files[i].df_name);
	free(d.d_files);
	buf_free(&d.d_pre);
	buf_free(&d.d_body);
	buf_free(&d.d_text);
}
