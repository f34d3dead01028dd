/* The Redis store's URL: redis://[[USER]:PASSWORD@]HOST[:PORT][/DB] and
 * unix:///PATH[?db=DB]. Messages name the part that is wrong, never the
 * URL itself: it may carry a password. */
#include <string.h>
#include "internal.h"
#include "util/num.h"
#include "redis_int.h"

#define BAD(...) wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT, __VA_ARGS__)

static int copy_part(char *dst, size_t size, const char *p, size_t n)
{
	if (n >= size || memchr(p, '\0', n))
		return -1;
	memcpy(dst, p, n);
	dst[n] = '\0';
	return 0;
}

static wms_status parse_db(wms__redis_addr *out, const char *p, size_t n, wms_error *err)
{
	uint64_t v;

	if (n > 1 && p[0] == '0')
		return BAD("shared.redis_url: the database must be a number 0-15");
	if (wms__parse_uint(p, n, 0, 15, &v) != WMS__NUM_OK)
		return BAD("shared.redis_url: the database must be a number 0-15");
	out->db = (unsigned)v;
	return WMS_OK;
}

static wms_status parse_unix(wms__redis_addr *out, const char *s, wms_error *err)
{
	const char *q = strchr(s, '?');
	size_t n = q ? (size_t)(q - s) : strlen(s);

	if (n < 2 || s[0] != '/')
		return BAD("shared.redis_url: unix:// needs an absolute path (unix:///run/redis.sock)");
	if (wms__url_bad_byte(s, n) < n || copy_part(out->path, sizeof(out->path), s, n))
		return BAD("shared.redis_url: the socket path is too long (at most %zu bytes) or holds a control byte",
			   sizeof(out->path) - 1);
	if (q) {
		if (strncmp(q + 1, "db=", 3) != 0)
			return BAD("shared.redis_url: the only query a unix:// URL takes is ?db=N");
		return parse_db(out, q + 4, strlen(q + 4), err);
	}
	return WMS_OK;
}

static wms_status parse_userinfo(wms__redis_addr *out, const char *p, size_t n, wms_error *err)
{
	const char *colon = memchr(p, ':', n);

	if (!colon)
		return BAD("shared.redis_url: credentials are USER:PASSWORD@ or :PASSWORD@");
	if (copy_part(out->user, sizeof(out->user), p, (size_t)(colon - p)) ||
	    copy_part(out->password, sizeof(out->password), colon + 1, n - (size_t)(colon - p) - 1))
		return BAD("shared.redis_url: the user or password is too long");
	if (!out->password[0])
		return BAD("shared.redis_url: the password is empty");
	return WMS_OK;
}

static wms_status parse_tcp(wms__redis_addr *out, const char *s, wms_error *err)
{
	const char *at, *hp, *slash, *end, *colon;
	size_t hn;
	wms_status st;
	uint64_t port;

	end = s + strlen(s);
	/* the password may hold '/' or '@': the last '@' ends it */
	at = NULL;
	for (hp = s; hp < end; hp++)
		if (*hp == '@')
			at = hp;
	if (at) {
		st = parse_userinfo(out, s, (size_t)(at - s), err);
		if (st != WMS_OK)
			return st;
		s = at + 1;
	}
	slash = strchr(s, '/');
	hp = slash ? slash : end;
	if (*s == '[') { /* [v6]:port */
		const char *rb = memchr(s, ']', (size_t)(hp - s));
		if (!rb || rb == s + 1 || copy_part(out->host, sizeof(out->host), s + 1, (size_t)(rb - s - 1)))
			return BAD("shared.redis_url: a bracketed IPv6 host is [ADDR]");
		colon = rb + 1 < hp && rb[1] == ':' ? rb + 1 : NULL;
		if (!colon && rb + 1 != hp)
			return BAD("shared.redis_url: after [ADDR] comes :PORT or /DB");
	} else {
		colon = memchr(s, ':', (size_t)(hp - s));
		if (copy_part(out->host, sizeof(out->host), s, (size_t)((colon ? colon : hp) - s)))
			return BAD("shared.redis_url: the host is too long");
	}
	hn = strlen(out->host);
	if (!hn || wms__url_bad_byte(out->host, hn) < hn)
		return BAD("shared.redis_url: the host is empty or holds a blank or control byte");
	out->port = 6379;
	if (colon) {
		size_t n = (size_t)(hp - colon - 1);
		if ((n > 1 && colon[1] == '0') ||
		    wms__parse_uint(colon + 1, n, 1, 65535, &port) != WMS__NUM_OK)
			return BAD("shared.redis_url: the port must be a number 1-65535");
		out->port = (int)port;
	}
	if (slash && slash[1])
		return parse_db(out, slash + 1, strlen(slash + 1), err);
	return WMS_OK;
}

wms_status wms__redis_url_parse(wms__redis_addr *out, const char *url, wms_error *err)
{
	memset(out, 0, sizeof(*out));
	if (!url || !*url)
		return BAD("shared.redis_url is required (redis://HOST:PORT/DB or unix:///PATH)");
	if (strlen(url) > 1024)
		return BAD("shared.redis_url is longer than 1024 bytes");
	if (!strncmp(url, "unix://", 7))
		return parse_unix(out, url + 7, err);
	if (!strncmp(url, "redis://", 8))
		return parse_tcp(out, url + 8, err);
	if (!strncmp(url, "rediss://", 9))
		return BAD("shared.redis_url: rediss:// (TLS) is not supported: hiredis 0.14 has no TLS; "
			   "use a unix socket or a trusted network");
	return BAD("shared.redis_url must start with redis:// or unix://");
}
