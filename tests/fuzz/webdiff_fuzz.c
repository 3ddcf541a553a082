/*
 * webdiff_fuzz.c: libFuzzer harness for the pure part of relayd's git
 * pages (relayd/relay_web_diff.c, compiled in): relay_web_diff() over
 * any text a patch author writes, and the checks of a ref and a path
 * taken from a URL.
 *
 * Invariants: the HTML has no NUL and every '<' in it opens or closes
 * one of the renderer's own elements (so no byte of the input became
 * markup); its tables and pre blocks are balanced; the counts of files
 * and lines agree with a second run; the rendered lines stay under
 * RELAY_DIFF_LINES_MAX.  A path the check accepts has no empty, "." or
 * ".." segment, no leading or trailing '/' and no control byte; a ref
 * it accepts does not start with '-' and holds no "..", "@{" or
 * control byte.
 */
#define _GNU_SOURCE /* memmem */
#include "fuzz.h"
#include "../../relayd/relay_web_diff.c"

/* The elements relay_web_diff() writes. */
static const char *const tags[] = { "<div class=", "</div>", "<style>",
	"</style>", "<p class=", "</p>", "<span class=", "</span>", "<ol ",
	"</ol>", "<li>", "</li>", "<a href=\"#", "</a>", "<table>", "</table>",
	"<tr class=", "</tr>", "<td>", "<td class=", "</td>",
	"<pre class=", "</pre>" };

static size_t
count(const char *s, size_t n, const char *what)
{
	size_t	    k = 0, w = strlen(what);
	const char *p = s, *e = s + n;

	while ((p = memmem(p, (size_t)(e - p), what, w)) != NULL) {
		k++;
		p += w;
	}
	return k;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct relay_diff_stat st, st2;
	struct buf	       b = BUF_INIT, b2 = BUF_INIT;
	const char	      *s = (const char *)data, *p, *style_end;
	size_t		       i, k;
	int		       ok;

	fuzz_init_log();
	relay_web_diff(&b, s, size, "x", &st);
	FUZZ_ASSERT(b.b_data != NULL && strlen(b.b_data) == b.b_len);
	style_end = strstr(b.b_data, "</style>");
	FUZZ_ASSERT(style_end != NULL);
	for (p = style_end; (p = strchr(p, '<')) != NULL; p++) {
		for (i = 0, ok = 0; i < sizeof(tags) / sizeof(tags[0]); i++)
			if (strncmp(p, tags[i], strlen(tags[i])) == 0)
				ok = 1;
		FUZZ_ASSERT(ok);
	}
	FUZZ_ASSERT(count(b.b_data, b.b_len, "<table>") ==
	    count(b.b_data, b.b_len, "</table>"));
	FUZZ_ASSERT(count(b.b_data, b.b_len, "<pre") ==
	    count(b.b_data, b.b_len, "</pre>"));
	FUZZ_ASSERT(st.ds_lines <= RELAY_DIFF_LINES_MAX);
	relay_web_diff(&b2, s, size, NULL, &st2);
	FUZZ_ASSERT(st.ds_files == st2.ds_files &&
	    st.ds_added == st2.ds_added && st.ds_removed == st2.ds_removed);
	buf_free(&b);
	buf_free(&b2);

	if (relay_web_path_ok(s, size)) {
		FUZZ_ASSERT(size == 0 || (s[0] != '/' && s[size - 1] != '/'));
		for (i = 0; i < size; i++)
			FUZZ_ASSERT(
			    (unsigned char)s[i] >= 0x20 && s[i] != 0x7f);
		for (i = 0; i < size; i = k + 1) {
			for (k = i; k < size && s[k] != '/'; k++)
				;
			FUZZ_ASSERT(k > i);
			FUZZ_ASSERT(!(k - i == 1 && s[i] == '.'));
			FUZZ_ASSERT(
			    !(k - i == 2 && s[i] == '.' && s[i + 1] == '.'));
		}
	}
	if (relay_web_ref_ok(s, size)) {
		FUZZ_ASSERT(size > 0 && s[0] != '-');
		FUZZ_ASSERT(memmem(s, size, "..", 2) == NULL);
		FUZZ_ASSERT(memmem(s, size, "@{", 2) == NULL);
		for (i = 0; i < size; i++)
			FUZZ_ASSERT((unsigned char)s[i] > 0x20 && s[i] != 0x7f);
	}
	return 0;
}
