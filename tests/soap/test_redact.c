/* The one redactor (src/soap/redact.c): which elements are secrets, by
 * namespace and not by prefix; every other byte kept; a body it cannot
 * read refused (or, for a log, withheld when it could hide a secret). */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>
#include "soap/redact.h"
#include "soap/soap.h"
#include "soap/limits.h"
#include "count_alloc.h"

#define WSSE "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-secext-1.0.xsd"
#define DECL "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"

/* Redact `in`; expect WMS_OK and exactly `want`. */
static void expect_redacted(const char *in, const char *want, unsigned passwords,
			    unsigned nonces, int wsse)
{
	wms__buf out = { NULL, 0, 0 };
	wms__secrets found;
	char why[192];
	wms_status st = wms__redact_secrets(&out, in, strlen(in), &found, why, sizeof(why));
	if (st != WMS_OK)
		fail_msg("%s: %s for\n%s", wms_status_name(st), why, in);
	if (out.len != strlen(want) || memcmp(out.data, want, out.len) != 0)
		fail_msg("got\n%.*s\nwant\n%s", (int)out.len, out.data, want);
	assert_int_equal(found.passwords, passwords);
	assert_int_equal(found.nonces, nonces);
	assert_int_equal(found.wsse, wsse);
	wms__buf_free(&out);
}

static void expect_refused(const char *in, size_t len, const char *why_part)
{
	wms__buf out = { NULL, 0, 0 };
	char why[192];
	wms_status st = wms__redact_secrets(&out, in, len, NULL, why, sizeof(why));
	if (st != WMS_ERR_NOT_XML)
		fail_msg("%s, want NOT_XML, for\n%.*s", wms_status_name(st), (int)(len > 200 ? 200 : len),
			 in);
	assert_null(out.data);
	assert_int_equal(out.len, 0);
	if (why_part && !strstr(why, why_part))
		fail_msg("why \"%s\" lacks \"%s\"", why, why_part);
}

/* What libwms builds: the wsse prefix. */
static void built_envelope(void **state)
{
	(void)state;
	expect_redacted(DECL "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\">"
			"<soap:Header><wsse:Security xmlns:wsse=\"" WSSE "\"><wsse:UsernameToken>"
			"<wsse:Username>bob</wsse:Username>"
			"<wsse:Password Type=\"#PasswordDigest\">c2VjcmV0</wsse:Password>"
			"<wsse:Nonce EncodingType=\"#Base64Binary\">bm9uY2U=</wsse:Nonce>"
			"</wsse:UsernameToken></wsse:Security></soap:Header><soap:Body/></soap:Envelope>",
			DECL "<soap:Envelope xmlns:soap=\"http://schemas.xmlsoap.org/soap/envelope/\">"
			"<soap:Header><wsse:Security xmlns:wsse=\"" WSSE "\"><wsse:UsernameToken>"
			"<wsse:Username>bob</wsse:Username>"
			"<wsse:Password Type=\"#PasswordDigest\">REDACTED</wsse:Password>"
			"<wsse:Nonce EncodingType=\"#Base64Binary\">REDACTED</wsse:Nonce>"
			"</wsse:UsernameToken></wsse:Security></soap:Header><soap:Body/></soap:Envelope>",
			1, 1, 1);
}

/* By namespace, whatever the prefix: another prefix, the default
 * namespace, a declaration on the element itself; a Nonce elsewhere is
 * data, a Password anywhere is not. */
static void by_namespace_not_prefix(void **state)
{
	(void)state;
	expect_redacted("<e xmlns:s=\"" WSSE "\"><s:Password>p1</s:Password>"
			"<s:Nonce>n1</s:Nonce></e>",
			"<e xmlns:s=\"" WSSE "\"><s:Password>REDACTED</s:Password>"
			"<s:Nonce>REDACTED</s:Nonce></e>",
			1, 1, 1);
	expect_redacted("<Security xmlns=\"" WSSE "\"><Nonce>n</Nonce><Password>p</Password></Security>",
			"<Security xmlns=\"" WSSE "\"><Nonce>REDACTED</Nonce>"
			"<Password>REDACTED</Password></Security>",
			1, 1, 1);
	expect_redacted("<e><x:Nonce xmlns:x=\"" WSSE "\">n</x:Nonce></e>",
			"<e><x:Nonce xmlns:x=\"" WSSE "\">REDACTED</x:Nonce></e>", 0, 1, 1);
	/* the wsse prefix bound to something else: its Nonce is not WS-Security's */
	expect_redacted("<e xmlns:wsse=\"urn:other\"><wsse:Nonce>7</wsse:Nonce><Nonce>8</Nonce></e>",
			"<e xmlns:wsse=\"urn:other\"><wsse:Nonce>7</wsse:Nonce><Nonce>8</Nonce></e>",
			0, 0, 0);
	expect_redacted("<e xmlns:o=\"urn:other\"><o:Password>p</o:Password><Password>q</Password></e>",
			"<e xmlns:o=\"urn:other\"><o:Password>REDACTED</o:Password>"
			"<Password>REDACTED</Password></e>",
			2, 0, 0);
	/* a name that only starts like one */
	expect_redacted("<e><PasswordHint>h</PasswordHint><Passwords>x</Passwords></e>",
			"<e><PasswordHint>h</PasswordHint><Passwords>x</Passwords></e>", 0, 0, 0);
}

/* Whatever the content is made of, all of it goes; what is around stays
 * byte for byte (spacing, quotes, comments, an end tag with spaces). */
static void content_of_any_kind(void **state)
{
	(void)state;
	expect_redacted("<e>\n  <Password a='1'  b=\"2\">x&amp;y&#x41;<![CDATA[<z>]]><!-- c --><k>v</k>"
			"</Password >\n  <!-- kept --></e>",
			"<e>\n  <Password a='1'  b=\"2\">REDACTED</Password >\n  <!-- kept --></e>", 1,
			0, 0);
	/* empty: nothing to hide, nothing written into it */
	expect_redacted("<e><Password/><Password></Password></e>",
			"<e><Password/><Password>REDACTED</Password></e>", 2, 0, 0);
	/* a Password inside a Password is inside the outer one's content */
	expect_redacted("<e><Password>a<Password>b</Password>c</Password></e>",
			"<e><Password>REDACTED</Password></e>", 1, 0, 0);
}

/* Offsets are the body's own bytes in an encoding other than UTF-8 too. */
static void latin1_body(void **state)
{
	(void)state;
	expect_redacted("<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n"
			"<e a=\"\xe9\xe9\xe9\">\xe9<Password>\xe9t\xe9</Password>\xe9</e>",
			"<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?>\n"
			"<e a=\"\xe9\xe9\xe9\">\xe9<Password>REDACTED</Password>\xe9</e>",
			1, 0, 0);
}

static void refused(void **state)
{
	/* "<e><Password>p</Password></e>" in UTF-16LE, with its byte order mark */
	static const char utf16[] = "\xff\xfe<\0e\0>\0<\0P\0a\0s\0s\0w\0o\0r\0d\0>\0p\0<\0/\0"
				    "P\0a\0s\0s\0w\0o\0r\0d\0>\0<\0/\0e\0>\0";
	(void)state;
#define R(s) s, sizeof(s) - 1
	expect_refused(R("<e><Password>p</Password>"), "not well-formed");
	expect_refused(R("<html><br></html><Password>p</Password>"), "not well-formed");
	expect_refused(R(""), "not well-formed");
	expect_refused(R("plain text"), "not well-formed");
	expect_refused(R("<!DOCTYPE e [<!ENTITY x \"p\">]><e><Password>&x;</Password></e>"), NULL);
	expect_refused(R("<a:e><Password>p</Password></a:e>"), "not well-formed");
#undef R
	/* UTF-16: libxml2 reads it, but its offsets are not the body's bytes:
	 * a secret in it cannot be located, refused */
	expect_refused(utf16, sizeof(utf16) - 1, "place in the body");
}

/* The structural limits, on both sides and twice in a row. */
/* Append `t` at *p. */
static void put(char **p, const char *t)
{
	size_t n = strlen(t);
	memcpy(*p, t, n + 1);
	*p += n;
}

static char *nested(unsigned depth)
{
	size_t n = (size_t)depth * 7 + 64, i;
	char *s = malloc(n), *p = s;
	if (!s)
		abort(); /* a test helper: no memory, no test */
	for (i = 0; i < depth; i++)
		put(&p, "<e>");
	put(&p, "<Password>x</Password>");
	for (i = 0; i < depth; i++)
		put(&p, "</e>");
	return s;
}

static char *attributes(unsigned count)
{
	size_t n = (size_t)count * 16 + 64, i;
	char *s = malloc(n), *p = s;
	char a[32];
	if (!s)
		abort();
	put(&p, "<e");
	for (i = 0; i < count; i++) {
		snprintf(a, sizeof(a), " a%zu=\"\"", i);
		put(&p, a);
	}
	put(&p, "><Password>x</Password></e>");
	return s;
}

static void limits_both_sides(void **state)
{
	int round;
	(void)state;
	for (round = 0; round < 2; round++) {
		/* the Password is one deeper than its ancestors */
		char *ok = nested(WMS__XML_MAX_DEPTH - 1), *deep = nested(WMS__XML_MAX_DEPTH);
		char *few = attributes(WMS__XML_MAX_ATTRS), *many = attributes(WMS__XML_MAX_ATTRS + 1);
		wms__buf out = { NULL, 0, 0 };
		wms__secrets found;
		char why[192];
		assert_int_equal(wms__redact_secrets(&out, ok, strlen(ok), &found, why, sizeof(why)),
				 WMS_OK);
		assert_non_null(strstr(out.data, "<Password>REDACTED</Password>"));
		wms__buf_free(&out);
		expect_refused(deep, strlen(deep), "deeper than 256");
		assert_int_equal(wms__redact_secrets(&out, few, strlen(few), &found, why, sizeof(why)),
				 WMS_OK);
		assert_int_equal(found.passwords, 1);
		wms__buf_free(&out);
		expect_refused(many, strlen(many), "256 attributes");
		free(ok);
		free(deep);
		free(few);
		free(many);
	}
}

/* For a log: what is not XML is shown when no secret element can hide in
 * it, withheld when one could. */
static void for_a_log(void **state)
{
	static const struct {
		const char *in;
		size_t len;
		const char *want; /* NULL: withheld */
	} cases[] = {
#define C(s) s, sizeof(s) - 1
		{ C("<e><Password>p</Password></e>"), "<e><Password>REDACTED</Password></e>" },
		{ C("<html><body>502 Bad Gateway<br></body></html>"),
		  "<html><body>502 Bad Gateway<br></body></html>" },
		{ C("upstream timed out"), "upstream timed out" },
		{ C("<html><br><Password>p</Password></html>"), NULL },
		{ C("<e><wsse:Nonce>n</wsse:Nonce>"), NULL }, /* cut short */
		{ C("<\0P\0a\0s\0s\0>\0"), NULL },             /* NUL bytes: UTF-16? */
#undef C
	};
	size_t i;
	(void)state;
	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		wms__buf out = { NULL, 0, 0 };
		assert_int_equal(wms__redact_for_log(&out, cases[i].in, cases[i].len), WMS_OK);
		if (cases[i].want) {
			if (out.len != strlen(cases[i].want) || memcmp(out.data, cases[i].want, out.len))
				fail_msg("case %zu: got %.*s", i, (int)out.len, out.data);
		} else {
			if (!out.data || !strstr(out.data, "withheld") ||
			    memmem(out.data, out.len, "p</", 3) || memmem(out.data, out.len, ">n<", 3))
				fail_msg("case %zu: not withheld: %.*s", i, (int)out.len, out.data);
		}
		wms__buf_free(&out);
	}
}

/* Out of memory at every allocation of libwms's own: NOMEM, nothing kept. */
static void out_of_memory(void **state)
{
	static const char in[] = "<e><Password>1</Password><Password>2</Password>"
				 "<Password>3</Password><Password>4</Password><Password>5</Password></e>";
	count_alloc a;
	wms_allocator hooks;
	long n;
	(void)state;
	for (n = 1;; n++) {
		wms__buf out = { NULL, 0, 0 };
		wms_status st;
		memset(&a, 0, sizeof(a));
		a.fail_at = n;
		hooks = count_alloc_hooks(&a);
		assert_int_equal(wms_set_allocator(&hooks), WMS_OK);
		st = wms__redact_secrets(&out, in, sizeof(in) - 1, NULL, NULL, 0);
		if (st == WMS_OK) {
			assert_non_null(strstr(out.data, "<Password>REDACTED</Password><Password>"));
			wms__buf_free(&out);
			assert_int_equal(a.live, 0);
			wms_set_allocator(NULL);
			break;
		}
		assert_int_equal(st, WMS_ERR_NOMEM);
		assert_null(out.data);
		assert_int_equal(a.live, 0);
		wms_set_allocator(NULL);
	}
	assert_true(n > 2); /* the spans and the output were both failed once */
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(built_envelope),
		cmocka_unit_test(by_namespace_not_prefix),
		cmocka_unit_test(content_of_any_kind),
		cmocka_unit_test(latin1_body),
		cmocka_unit_test(refused),
		cmocka_unit_test(limits_both_sides),
		cmocka_unit_test(for_a_log),
		cmocka_unit_test(out_of_memory),
	};
	wms__xml_init();
	return cmocka_run_group_tests(tests, NULL, NULL);
}
