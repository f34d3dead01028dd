/* What a failed libcurl transfer means (transport/curl_int.h): a status,
 * the delivery, the transport-neutral cause and a one-line message with
 * no credentials in it. The table and the few codes read in context are
 * explained in docs/internals/curl-transport.md, "What a failure means". */
#include <stdio.h>
#include <string.h>
#include <curl/curl.h>
#include "init.h"
#include "internal.h"
#include "wms/sys/transport.h"
#include "transport/curl_int.h"

/* Copy src to dst (size bytes), replacing every occurrence of needle that
 * is followed by '@' with "***" (the '@' kept). */
static void scrub_into(char *dst, size_t size, const char *src, const char *needle, size_t nlen)
{
	size_t o = 0;
	if (!size)
		return;
	while (*src && o + 1 < size) {
		if (nlen && strncmp(src, needle, nlen) == 0 && src[nlen] == '@') {
			const char *r = "***";
			while (*r && o + 1 < size)
				dst[o++] = *r++;
			src += nlen;
		} else {
			dst[o++] = *src++;
		}
	}
	dst[o] = '\0';
}

/* Remove the URL's userinfo (user:password) and the password alone from
 * msg, where a copy of the URL would carry them: just before its '@'. A
 * match anywhere else is the message's own text, left as it is: a short
 * password ("or") masked inside the words of "Couldn't connect to server"
 * would garble the message and, by where the stars fall, tell the
 * password to whoever reads the log. */
void wms__curl_scrub_credentials(char *msg, size_t size, const char *url)
{
	char tmp[CURL_ERROR_SIZE + 128];
	const char *auth, *at = NULL, *colon, *p;
	size_t alen;

	if (!url || size > sizeof(tmp))
		return;
	p = strstr(url, "://");
	auth = p ? p + 3 : url;
	alen = strcspn(auth, "/?#");
	for (p = auth; p < auth + alen; p++)
		if (*p == '@')
			at = p;
	if (!at || at == auth)
		return;
	scrub_into(tmp, sizeof(tmp), msg, auth, (size_t)(at - auth));
	colon = memchr(auth, ':', (size_t)(at - auth));
	if (colon && colon + 1 < at)
		scrub_into(msg, size, tmp, colon + 1, (size_t)(at - colon - 1));
	else
		wms__strlcpy(msg, tmp, size);
}

/* What a libcurl code means: a status, how far delivery may have got, and
 * the transport-neutral cause. The codes that depend on what else happened
 * (write, memory, protocol, abort) are read in map_curl_error. */
enum reach { NOT_SENT, AS_SENT, MAYBE_DELIVERED };

static const struct curl_meaning {
	int code;
	wms_status status;
	enum reach reach;
	wms_cause cause;
} curl_meanings[] = {
	{ CURLE_COULDNT_RESOLVE_HOST, WMS_ERR_CONNECT, NOT_SENT, WMS_CAUSE_DNS },
	{ CURLE_COULDNT_RESOLVE_PROXY, WMS_ERR_CONNECT, NOT_SENT, WMS_CAUSE_DNS },
	{ CURLE_COULDNT_CONNECT, WMS_ERR_CONNECT, NOT_SENT, WMS_CAUSE_REFUSED },
	{ CURLE_OPERATION_TIMEDOUT, WMS_ERR_TIMEOUT, AS_SENT, WMS_CAUSE_TIMEOUT },
	/* Our own trust or identity files could not be used (unreadable, not
	 * PEM, a key that is not the certificate's): an option to fix, which
	 * says nothing about the WMS. Nothing was sent. */
	{ CURLE_SSL_CACERT_BADFILE, WMS_ERR_INVALID_ARG, NOT_SENT, WMS_CAUSE_LOCAL_FILE },
	{ CURLE_SSL_CERTPROBLEM, WMS_ERR_INVALID_ARG, NOT_SENT, WMS_CAUSE_LOCAL_FILE },
	{ CURLE_SSL_CRL_BADFILE, WMS_ERR_INVALID_ARG, NOT_SENT, WMS_CAUSE_LOCAL_FILE },
	{ CURLE_SSL_ENGINE_NOTFOUND, WMS_ERR_INVALID_ARG, NOT_SENT, WMS_CAUSE_LOCAL_FILE },
	{ CURLE_SSL_ENGINE_SETFAILED, WMS_ERR_INVALID_ARG, NOT_SENT, WMS_CAUSE_LOCAL_FILE },
	{ CURLE_SSL_ENGINE_INITFAILED, WMS_ERR_INVALID_ARG, NOT_SENT, WMS_CAUSE_LOCAL_FILE },
	/* Handshake failures: nothing of the request was written. */
	{ CURLE_SSL_CONNECT_ERROR, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_HANDSHAKE },
	{ CURLE_PEER_FAILED_VERIFICATION, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_VERIFY },
	{ CURLE_SSL_CIPHER, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_HANDSHAKE },
	{ CURLE_SSL_ISSUER_ERROR, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_VERIFY },
	{ CURLE_SSL_PINNEDPUBKEYNOTMATCH, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_VERIFY },
	{ CURLE_SSL_INVALIDCERTSTATUS, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_VERIFY },
#if LIBCURL_VERSION_NUM >= 0x074d00
	{ CURLE_SSL_CLIENTCERT, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_HANDSHAKE },
#endif
	{ CURLE_USE_SSL_FAILED, WMS_ERR_TLS, AS_SENT, WMS_CAUSE_TLS_HANDSHAKE },
	{ CURLE_SEND_ERROR, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_RESET },
	{ CURLE_RECV_ERROR, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_RESET },
	{ CURLE_GOT_NOTHING, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_RESET },
	{ CURLE_WEIRD_SERVER_REPLY, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_PROTOCOL },
	{ CURLE_HTTP2, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_PROTOCOL },
	{ CURLE_HTTP2_STREAM, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_PROTOCOL },
	{ CURLE_HTTP3, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_PROTOCOL },
	{ CURLE_QUIC_CONNECT_ERROR, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_PROTOCOL },
	{ CURLE_PROXY, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_PROTOCOL },
	{ CURLE_BAD_CONTENT_ENCODING, WMS_ERR_TRANSPORT, AS_SENT, WMS_CAUSE_PROTOCOL },
	/* the connection closed before the body's announced end */
	{ CURLE_PARTIAL_FILE, WMS_ERR_TRUNCATED, MAYBE_DELIVERED, WMS_CAUSE_RESET },
	{ CURLE_URL_MALFORMAT, WMS_ERR_INVALID_ARG, NOT_SENT, WMS_CAUSE_NONE },
	{ CURLE_OK, WMS_ERR_INTERNAL, NOT_SENT, WMS_CAUSE_NONE },
	{ CURLE_FAILED_INIT, WMS_ERR_INTERNAL, NOT_SENT, WMS_CAUSE_NONE },
	{ CURLE_NOT_BUILT_IN, WMS_ERR_INTERNAL, NOT_SENT, WMS_CAUSE_NONE },
	{ CURLE_UNKNOWN_OPTION, WMS_ERR_INTERNAL, NOT_SENT, WMS_CAUSE_NONE },
	{ CURLE_BAD_FUNCTION_ARGUMENT, WMS_ERR_INTERNAL, NOT_SENT, WMS_CAUSE_NONE },
};

/* Whether the connection (TLS included) was made: libcurl's pre-transfer
 * time is set once it was (on_progress may not have run since). */
static int connected_now(const struct call *c)
{
	curl_off_t pre = 0;
	return c->connected || (c->h && curl_easy_getinfo(c->h, CURLINFO_PRETRANSFER_TIME_T, &pre) ==
						CURLE_OK && pre > 0);
}

/* Map a failed transfer (or setopt) to a status, delivery and cause. */
static wms_status map_curl_error(CURLcode rc, int sent, const struct call *c,
				 const char *errbuf, wms_delivery *delivery, wms_cause *cause)
{
	wms_delivery maybe = sent ? WMS_DELIVERY_UNKNOWN : WMS_DELIVERY_NOT_SENT;
	size_t i;
	*delivery = maybe;
	*cause = WMS_CAUSE_OTHER;
	/* Written once, the resend refused: the upload count the resend reset
	 * says nothing left, but it did. */
	if (c->resend_refused) {
		*delivery = WMS_DELIVERY_UNKNOWN;
		*cause = WMS_CAUSE_RESET;
		return WMS_ERR_TRANSPORT;
	}
	switch ((int)rc) { /* int: -Wswitch-enum would want all ~100 codes */
	case CURLE_WRITE_ERROR:
		/* One of our callbacks refused the data. */
		if (c->cb_status == WMS_ERR_TOO_LARGE) {
			*delivery = WMS_DELIVERY_UNKNOWN;
			*cause = WMS_CAUSE_NONE;
			return WMS_ERR_TOO_LARGE;
		}
		if (c->cb_status == WMS_ERR_NOMEM) {
			*cause = WMS_CAUSE_NONE;
			return WMS_ERR_NOMEM;
		}
		return WMS_ERR_TRANSPORT;
	case CURLE_UNSUPPORTED_PROTOCOL:
		/* Nothing sent: a scheme libcurl does not speak. Sent: the answer was
		 * not HTTP ("HTTP/0.9 when not allowed"), e.g. stray bytes of the last
		 * reply on a reused connection. */
		if (sent) {
			*delivery = WMS_DELIVERY_UNKNOWN;
			*cause = WMS_CAUSE_PROTOCOL;
			return WMS_ERR_TRANSPORT;
		}
		*cause = WMS_CAUSE_NONE;
		return WMS_ERR_INVALID_ARG;
	case CURLE_URL_MALFORMAT:
		/* 7.88 says "No URL set" for a URL given parsed (set_url in
		 * curl.c) when it cannot allocate the copy it makes of it at the
		 * start of a transfer. Other 3s of a parsed URL are real: a NUL
		 * in the user name, a host name the IDN conversion refuses. */
		if (c->transferred && c->url_parsed && errbuf &&
		    strncmp(errbuf, "No URL set", 10) == 0) {
			*delivery = WMS_DELIVERY_NOT_SENT;
			*cause = WMS_CAUSE_NONE;
			return WMS_ERR_NOMEM;
		}
		break;
	case CURLE_OUT_OF_MEMORY:
		/* A transfer that ended in 27 with no allocation seen failing:
		 * libcurl says "out of memory" also when a reply header line
		 * exceeds CURL_MAX_HTTP_HEADER (100 KB), a reply it cannot take,
		 * which the breaker must count. With libcurl not routed through
		 * the seam a real allocation failure looks the same and is
		 * reported as this too. */
		if (c->transferred && !c->lib_alloc_failed) {
			*cause = WMS_CAUSE_PROTOCOL;
			return WMS_ERR_TRANSPORT;
		}
		*cause = WMS_CAUSE_NONE;
		return WMS_ERR_NOMEM;
	case CURLE_ABORTED_BY_CALLBACK:
		if (c->stalled) {
			*cause = WMS_CAUSE_STALL;
			return WMS_ERR_TIMEOUT;
		}
		*delivery = WMS_DELIVERY_NOT_SENT;
		*cause = WMS_CAUSE_NONE;
		return WMS_ERR_INTERNAL;
	default:
		break;
	}
	for (i = 0; i < sizeof(curl_meanings) / sizeof(curl_meanings[0]); i++) {
		const struct curl_meaning *m = &curl_meanings[i];
		if (m->code != (int)rc)
			continue;
		*delivery = m->reach == NOT_SENT ? WMS_DELIVERY_NOT_SENT
			    : m->reach == AS_SENT ? maybe
						  : WMS_DELIVERY_UNKNOWN;
		*cause = m->cause;
		if (m->cause == WMS_CAUSE_TIMEOUT && !connected_now(c))
			*cause = WMS_CAUSE_CONNECT_TIMEOUT;
		return m->status;
	}
	/* Anything else (a libcurl code this file does not know) is a transport
	 * failure; whether it left depends on what was written. */
	return WMS_ERR_TRANSPORT;
}

wms_status wms__curl_fail(wms_error *err, CURLcode rc, int sent, const struct call *c,
			    const char *errbuf, const char *url, long http_status)
{
	char msg[CURL_ERROR_SIZE + 64];
	const char *text = errbuf && errbuf[0] ? errbuf : curl_easy_strerror(rc);
	size_t len;
	wms_delivery delivery;
	wms_cause cause;
	wms_status st = map_curl_error(rc, sent, c, errbuf, &delivery, &cause);

	if (c->resend_refused)
		snprintf(msg, sizeof(msg),
			 "connection closed by the WMS after the request was sent, before any "
			 "reply; not resent (it may have been received)%s%s (curl %d)",
			 errbuf && errbuf[0] ? ": " : "", errbuf ? errbuf : "", (int)rc);
	else if (st == WMS_ERR_TOO_LARGE)
		snprintf(msg, sizeof(msg), "reply body exceeds %zu bytes (curl %d)",
			 c->resp->max_body, (int)rc);
	else if (rc == CURLE_OUT_OF_MEMORY && st == WMS_ERR_TRANSPORT)
		snprintf(msg, sizeof(msg),
			 "libcurl could not take the reply: a header line over its %d-byte "
			 "limit, or another of its size limits%s (curl %d)",
			 (int)CURL_MAX_HTTP_HEADER, wms__curl_routed() ? "" : ", or out of memory",
			 (int)rc);
	else if (rc == CURLE_URL_MALFORMAT && st == WMS_ERR_NOMEM)
		snprintf(msg, sizeof(msg), "out of memory: libcurl could not copy the URL (curl %d)",
			 (int)rc);
	else if (st == WMS_ERR_TIMEOUT && c->stalled)
		snprintf(msg, sizeof(msg), "stall guard: nothing moved for %llu ms (curl %d)",
			 (unsigned long long)(c->stall_ns / 1000000u), (int)rc);
	else if (st == WMS_ERR_INVALID_ARG && rc != CURLE_URL_MALFORMAT &&
		 rc != CURLE_UNSUPPORTED_PROTOCOL)
		snprintf(msg, sizeof(msg), "TLS set-up (ca_file, ca_path, client_cert, client_key): "
			 "%s (curl %d)", text, (int)rc);
	else
		snprintf(msg, sizeof(msg), "%s (curl %d)", text, (int)rc);
	/* curl's error buffer may end with a newline. */
	len = strlen(msg);
	while (len && (msg[len - 1] == '\n' || msg[len - 1] == '\r'))
		msg[--len] = '\0';
	wms__curl_scrub_credentials(msg, sizeof(msg), url);
	wms_transport_fail(err, st, delivery, "%s", msg);
	if (err) {
		err->curl_code = (int)rc;
		err->cause = cause;
		if (http_status > 0)
			err->http_status = http_status;
	}
	return st;
}

const char *wms__curl_url_refused(const char *url, int *code)
{
#if LIBCURL_VERSION_NUM >= 0x075000 /* curl_url_strerror */
	CURLU *u;
	CURLUcode uc;
	int routed;

	*code = 0;
	/* its allocations go where the transport's will (wms_global_init);
	 * if libcurl cannot start, or parse for want of memory, the transfer
	 * says so */
	if (wms__curl_global_init(&routed) != WMS_OK || !(u = curl_url()))
		return NULL;
	uc = curl_url_set(u, CURLUPART_URL, url, WMS__CURL_URL_FLAGS);
	curl_url_cleanup(u);
	if (uc == CURLUE_OK || uc == CURLUE_OUT_OF_MEMORY)
		return NULL;
	*code = (int)uc;
	return curl_url_strerror(uc);
#else
	(void)url;
	*code = 0;
	return NULL;
#endif
}
