/*
 * The recording transport (wms/fixture.h): each request goes to an inner
 * transport and the exchange is written as a fixture file, secrets redacted
 * and volatile elements masked.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>


#include "internal.h"
#include "util/base64.h"
#include "wms/fixture.h"
#include "fixture/fixture.h"
#include "soap/redact.h"

#define REDACTED WMS__REDACTED

typedef struct recorder {
	wms_transport parent;
	wms_transport *inner;
	char *directory;
	char *prefix;
	wms_record_name_fn name;
	void *name_ctx;
	char **volatiles;
	size_t volatile_count;
	pthread_mutex_t lock;
	unsigned next;  /* the last index handed out */
	size_t written;
} recorder;

/* Length of the valid UTF-8 character at s (n bytes left), 0 if invalid or
 * not allowed in XML 1.0 (C0 controls except tab/LF, CR which XML folds,
 * surrogates, U+FFFE/U+FFFF). */
static size_t xml_char_len(const unsigned char *s, size_t n)
{
	uint32_t cp;
	size_t len, i;
	if (s[0] < 0x80) {
		if (s[0] < 0x20 && s[0] != '\t' && s[0] != '\n')
			return 0;
		return 1;
	}
	if ((s[0] & 0xe0) == 0xc0) {
		len = 2;
		cp = s[0] & 0x1fu;
	} else if ((s[0] & 0xf0) == 0xe0) {
		len = 3;
		cp = s[0] & 0x0fu;
	} else if ((s[0] & 0xf8) == 0xf0) {
		len = 4;
		cp = s[0] & 0x07u;
	} else {
		return 0;
	}
	if (len > n)
		return 0;
	for (i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = (cp << 6) | (s[i] & 0x3fu);
	}
	if ((len == 2 && cp < 0x80) || (len == 3 && cp < 0x800) || (len == 4 && cp < 0x10000) ||
	    cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff) || cp == 0xfffe || cp == 0xffff)
		return 0;
	return len;
}

/* Whether `data` survives a CDATA section byte for byte. */
static int cdata_safe(const char *data, size_t len)
{
	size_t i = 0, n;
	while (i < len) {
		n = xml_char_len((const unsigned char *)data + i, len - i);
		if (!n)
			return 0;
		if (n == 1 && data[i] == ']' && i + 2 < len && data[i + 1] == ']' && data[i + 2] == '>')
			return 0;
		i += n;
	}
	return 1;
}

/* Escaped text for an attribute or element; bytes XML cannot carry become '?'. */
static wms_status put_escaped(wms__buf *out, const char *s, size_t len)
{
	size_t i = 0, n;
	wms_status st = WMS_OK;
	while (i < len && st == WMS_OK) {
		char c = s[i];
		n = xml_char_len((const unsigned char *)s + i, len - i);
		if (!n) {
			st = wms__fx_put(out, "?");
			i++;
			continue;
		}
		if (c == '&')
			st = wms__fx_put(out, "&amp;");
		else if (c == '<')
			st = wms__fx_put(out, "&lt;");
		else if (c == '>')
			st = wms__fx_put(out, "&gt;");
		else if (c == '"')
			st = wms__fx_put(out, "&quot;");
		else if (c == '\n')
			st = wms__fx_put(out, "&#10;");
		else if (c == '\t')
			st = wms__fx_put(out, "&#9;");
		else
			st = wms__buf_append(out, s + i, n);
		i += n;
	}
	return st;
}

/* Base64 in lines of 76 characters, each after a newline and `indent`. */
static wms_status put_b64(wms__buf *out, const unsigned char *d, size_t len, const char *indent)
{
	size_t n = wms__base64_len(len), i;
	char *text = wms__malloc(n + 1);
	wms_status st;

	if (!text)
		return WMS_ERR_NOMEM;
	st = wms__base64_encode(text, n + 1, d, len);
	for (i = 0; i < n && st == WMS_OK; i += 76) {
		st = wms__fx_put(out, "\n");
		if (st == WMS_OK)
			st = wms__fx_put(out, indent);
		if (st == WMS_OK)
			st = wms__buf_append(out, text + i, n - i < 76 ? n - i : 76);
	}
	wms__free(text);
	return st;
}

/* <body> for `data`: a CDATA section when it survives one, else base64. */
static wms_status put_body(wms__buf *out, const char *data, size_t len, const char *indent)
{
	wms_status st;
	if (!len)
		return WMS_OK;
	st = wms__fx_put(out, indent);
	if (st != WMS_OK)
		return st;
	if (cdata_safe(data, len)) {
		st = wms__fx_put(out, "<body><![CDATA[");
		if (st == WMS_OK)
			st = wms__buf_append(out, data, len);
		return st == WMS_OK ? wms__fx_put(out, "]]></body>\n") : st;
	}
	st = wms__fx_put(out, "<body encoding=\"base64\">");
	if (st == WMS_OK) {
		char deeper[32];
		snprintf(deeper, sizeof(deeper), "%s  ", indent);
		st = put_b64(out, (const unsigned char *)data, len, deeper);
	}
	if (st == WMS_OK)
		st = wms__fx_put(out, "\n");
	if (st == WMS_OK)
		st = wms__fx_put(out, indent);
	return st == WMS_OK ? wms__fx_put(out, "</body>\n") : st;
}

static int is_secret_header(const char *name)
{
	return strcasecmp(name, "Authorization") == 0 || strcasecmp(name, "Proxy-Authorization") == 0;
}

static wms_status put_header(wms__buf *out, const char *indent, const char *name, const char *value)
{
	wms_status st = wms__fx_put(out, indent);
	if (st == WMS_OK)
		st = wms__fx_put(out, "<header name=\"");
	if (st == WMS_OK)
		st = put_escaped(out, name, strlen(name));
	if (st == WMS_OK)
		st = wms__fx_put(out, "\">");
	if (st == WMS_OK) {
		if (is_secret_header(name))
			st = wms__fx_put(out, REDACTED);
		else
			st = put_escaped(out, value, strlen(value));
	}
	return st == WMS_OK ? wms__fx_put(out, "</header>\n") : st;
}

/* The request body as it goes on disk, secrets replaced (soap/redact.h),
 * and what it held, which says what the fixture masks. A body that is not
 * XML cannot be checked: refused (WMS_ERR_FIXTURE, `why` says why). */
static wms_status redact_request(const wms_http_request *req, wms__buf *out, wms__secrets *found,
				 char *why, size_t why_size)
{
	wms_status st = wms__redact_secrets(out, req->body, req->body_len, found, why, why_size);
	if (st == WMS_ERR_NOT_XML)
		return WMS_ERR_FIXTURE;
	if (st == WMS_OK && !out->data)
		st = wms__buf_append(out, "", 0);
	return st;
}

static wms_status put_mask(wms__buf *out, const char *name, char **seen, size_t *nseen)
{
	size_t i;
	wms_status st;
	for (i = 0; i < *nseen; i++)
		if (strcmp(seen[i], name) == 0)
			return WMS_OK;
	seen[(*nseen)++] = (char *)(uintptr_t)name;
	st = wms__fx_put(out, "    <mask>");
	if (st == WMS_OK)
		st = put_escaped(out, name, strlen(name));
	return st == WMS_OK ? wms__fx_put(out, "</mask>\n") : st;
}

static const char *fault_name(wms__fx_fault_kind k)
{
	switch (k) {
	case FAULT_TIMEOUT: return "timeout";
	case FAULT_REFUSED: return "refused";
	case FAULT_RESET: return "reset";
	case FAULT_DNS: return "dns";
	case FAULT_CONNECT_TIMEOUT: return "connect-timeout";
	case FAULT_RESET_BEFORE_SEND: return "reset-before-send";
	case FAULT_NONE: return "none";
	}
	return "none";
}

/* The whole fixture file's text. */
static wms_status build_fixture(const recorder *rec, const char *name, const char *operation,
				const wms_http_request *req, const char *body, size_t body_len,
				const wms__secrets *rd, const wms_http_response *resp,
				wms__fx_fault_kind fault, uint32_t elapsed_ms, wms__buf *out)
{
	char **seen = NULL;
	size_t nseen = 0, i;
	char num[64];
	wms_status st;

	seen = wms__calloc(rec->volatile_count + 4, sizeof(*seen));
	if (!seen)
		return WMS_ERR_NOMEM;
	st = wms__fx_put(out, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
		      "<!-- Recorded by the libwms recording transport; format: docs/fixtures.md -->\n"
		      "<fixture xmlns=\"" FIXTURE_NS "\" name=\"");
	if (st == WMS_OK)
		st = put_escaped(out, name, strlen(name));
	if (st == WMS_OK)
		st = wms__fx_put(out, "\">\n  <description>Recorded ");
	if (st == WMS_OK)
		st = put_escaped(out, operation, strlen(operation));
	if (st == WMS_OK)
		st = wms__fx_put(out, " exchange</description>\n  <request operation=\"");
	if (st == WMS_OK)
		st = put_escaped(out, operation, strlen(operation));
	if (st == WMS_OK)
		st = wms__fx_put(out, "\" soap-action=\"");
	if (st == WMS_OK && req->soap_action)
		st = put_escaped(out, req->soap_action, strlen(req->soap_action));
	if (st == WMS_OK)
		st = wms__fx_put(out, "\">\n");
	if (st == WMS_OK && rd->passwords)
		st = put_mask(out, "Password", seen, &nseen);
	if (st == WMS_OK && (rd->wsse || rd->nonces))
		st = put_mask(out, "Nonce", seen, &nseen);
	if (st == WMS_OK && rd->wsse)
		st = put_mask(out, "Created", seen, &nseen);
	if (st == WMS_OK && rd->wsse) /* wsu:Timestamp's other half */
		st = put_mask(out, "Expires", seen, &nseen);
	for (i = 0; i < rec->volatile_count && st == WMS_OK; i++)
		st = put_mask(out, rec->volatiles[i], seen, &nseen);
	if (st == WMS_OK && req->content_type)
		st = put_header(out, "    ", "Content-Type", req->content_type);
	if (st == WMS_OK)
		st = put_body(out, body, body_len, "    ");
	if (st == WMS_OK)
		st = wms__fx_put(out, "  </request>\n");
	if (st != WMS_OK)
		goto done;
	if (fault == FAULT_NONE) {
		snprintf(num, sizeof(num), "  <reply status=\"%ld\">\n", resp->status);
		st = wms__fx_put(out, num);
		if (st == WMS_OK && resp->content_type)
			st = put_header(out, "    ", "Content-Type", resp->content_type);
		if (st == WMS_OK && resp->retry_after_ms) {
			/* whole seconds, rounded up: the replay asks at least as long
			 * (UINT32_MAX ms is 4294968 s, which the loader caps back) */
			snprintf(num, sizeof(num), "%llu",
				 ((unsigned long long)resp->retry_after_ms + 999u) / 1000u);
			st = put_header(out, "    ", "Retry-After", num);
		}
		if (st == WMS_OK)
			st = put_body(out, resp->body, resp->body ? resp->body_len : 0, "    ");
		if (st == WMS_OK)
			st = wms__fx_put(out, "  </reply>\n");
	} else {
		snprintf(num, sizeof(num), "  <fault kind=\"%s\" after-ms=\"%u\"/>\n", fault_name(fault),
			 (unsigned)elapsed_ms);
		st = wms__fx_put(out, num);
	}
	if (st == WMS_OK)
		st = wms__fx_put(out, "</fixture>\n");
done:
	wms__free(seen);
	return st;
}

/* Write `data` to dir/name through a temporary file and a rename. */
static wms_status write_atomic(const char *dir, const char *name, const char *data, size_t len,
			       char *why, size_t why_size)
{
	size_t plen = strlen(dir) + strlen(name) + 32;
	char *path = wms__malloc(plen), *tmp = wms__malloc(plen);
	int fd = -1;
	size_t off = 0;
	wms_status st = WMS_ERR_FIXTURE;

	if (tmp)
		tmp[0] = '\0'; /* nothing to unlink yet */
	if (!path || !tmp) {
		st = WMS_ERR_NOMEM;
		snprintf(why, why_size, "out of memory");
		goto done;
	}
	snprintf(path, plen, "%s/%s", dir, name);
	snprintf(tmp, plen, "%s/.%s.tmp.XXXXXX", dir, name);
	fd = mkstemp(tmp);
	if (fd < 0) {
		snprintf(why, why_size, "cannot create a file in %s: %s", dir, strerror(errno));
		tmp[0] = '\0';
		goto done;
	}
	while (off < len) {
		ssize_t n = write(fd, data + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {
			snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
			goto done;
		}
		off += (size_t)n;
	}
	if (fchmod(fd, 0644) != 0 || fsync(fd) != 0) {
		snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
		goto done;
	}
	if (close(fd) != 0) {
		fd = -1;
		snprintf(why, why_size, "cannot write %s: %s", path, strerror(errno));
		goto done;
	}
	fd = -1;
	if (rename(tmp, path) != 0) {
		snprintf(why, why_size, "cannot rename to %s: %s", path, strerror(errno));
		goto done;
	}
	tmp[0] = '\0';
	st = WMS_OK;
done:
	if (fd >= 0)
		close(fd);
	if (tmp && tmp[0])
		unlink(tmp);
	wms__free(path);
	wms__free(tmp);
	return st;
}

/* The operation as it goes into a file name: [A-Za-z0-9._-], at most 48. */
static void file_operation(const wms_http_request *req, char *buf, size_t size)
{
	const char *op = req->operation;
	size_t i, n = 0;
	if ((!op || !*op) && req->soap_action) {
		op = strrchr(req->soap_action, '/');
		op = op ? op + 1 : req->soap_action;
	}
	if (!op || !*op)
		op = "request";
	for (i = 0; op[i] && n + 1 < size && n < 48; i++) {
		char c = op[i];
		int ok = (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
			 c == '.' || c == '_' || c == '-';
		buf[n++] = ok ? c : '_';
	}
	buf[n] = '\0';
}

static wms_status record_exchange(recorder *rec, const wms_http_request *req,
				  const wms_http_response *resp, wms__fx_fault_kind fault,
				  uint32_t elapsed_ms, char *why, size_t why_size)
{
	char fname[256], opname[64], fxname[256];
	wms__buf body = { NULL, 0, 0 };
	size_t n;
	wms__secrets rd;
	wms__buf text = { NULL, 0, 0 };
	unsigned index;
	wms_status st;

	file_operation(req, opname, sizeof(opname));
	pthread_mutex_lock(&rec->lock);
	index = ++rec->next;
	pthread_mutex_unlock(&rec->lock);
	if (rec->name) {
		memset(fname, 0, sizeof(fname));
		if (rec->name(fname, sizeof(fname), index, opname, rec->name_ctx) != 0) {
			snprintf(why, why_size, "the name callback refused exchange %u", index);
			st = WMS_ERR_FIXTURE;
			goto done;
		}
		if (!memchr(fname, '\0', sizeof(fname)) || !fname[0] || fname[0] == '.' ||
		    strchr(fname, '/')) {
			snprintf(why, why_size, "the name callback gave an unusable file name for exchange %u",
				 index);
			st = WMS_ERR_FIXTURE;
			goto done;
		}
	} else {
		snprintf(fname, sizeof(fname), "%s%03u-%s.xml", rec->prefix, index, opname);
	}
	n = strlen(fname);
	if (n > 4 && strcmp(fname + n - 4, ".xml") == 0)
		n -= 4;
	snprintf(fxname, sizeof(fxname), "%.*s", (int)n, fname);

	st = redact_request(req, &body, &rd, why, why_size);
	if (st == WMS_ERR_FIXTURE) {
		char inner[160];
		snprintf(inner, sizeof(inner), "%s", why);
		snprintf(why, why_size, "request body cannot be checked for secrets: %.160s", inner);
		goto done;
	}
	if (st == WMS_OK)
		st = build_fixture(rec, fxname, req->operation && *req->operation ? req->operation : opname,
				   req, body.data, body.len, &rd, resp, fault, elapsed_ms, &text);
	if (st == WMS_ERR_NOMEM)
		snprintf(why, why_size, "out of memory");
	if (st != WMS_OK)
		goto done;
	st = write_atomic(rec->directory, fname, text.data, text.len, why, why_size);
	if (st == WMS_OK) {
		pthread_mutex_lock(&rec->lock);
		rec->written++;
		pthread_mutex_unlock(&rec->lock);
	}
done:
	wms__buf_free(&body);
	wms__buf_free(&text);
	return st;
}

static wms_status record_send(wms_transport *self, const wms_http_request *req,
			      wms_http_response *resp, wms_error *err)
{
	recorder *rec = (recorder *)self;
	wms_error local;
	wms_error *e = err ? err : &local;
	uint64_t t0;
	uint32_t elapsed_ms;
	wms__fx_fault_kind fault;
	char why[WMS_ERROR_MESSAGE_MAX];
	wms_status st, wst;

	if (!self || !req || !resp)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "recording transport: NULL request or response");
	wms_error_clear(&local);
	t0 = wms__now_ns();
	st = rec->inner->send(rec->inner, req, resp, e);
	elapsed_ms = (uint32_t)((wms__now_ns() - t0) / 1000000u);
	switch (st) {
	case WMS_OK:
		fault = FAULT_NONE;
		break;
	case WMS_ERR_TIMEOUT:
		/* replayed with the delivery the live call had */
		fault = e->delivery == WMS_DELIVERY_NOT_SENT ? FAULT_CONNECT_TIMEOUT : FAULT_TIMEOUT;
		break;
	case WMS_ERR_CONNECT:
		fault = e->cause == WMS_CAUSE_DNS ? FAULT_DNS : FAULT_REFUSED;
		break;
	case WMS_ERR_TRANSPORT:
		/* a reset before any byte left keeps NOT_SENT: safe to resend */
		fault = e->delivery == WMS_DELIVERY_NOT_SENT ? FAULT_RESET_BEFORE_SEND : FAULT_RESET;
		break;
	case WMS_ERR_INVALID_ARG:
	case WMS_ERR_NOMEM:
	case WMS_ERR_CIRCUIT_OPEN:
	case WMS_ERR_BULKHEAD_FULL:
	case WMS_ERR_HTTP:
	case WMS_ERR_SOAP_FAULT:
	case WMS_ERR_NOT_XML:
	case WMS_ERR_TRUNCATED:
	case WMS_ERR_UNEXPECTED_REPLY:
	case WMS_ERR_TOO_LARGE:
	case WMS_ERR_UNSAFE_XML:
	case WMS_ERR_TLS:
	case WMS_ERR_FIXTURE:
	case WMS_ERR_CONFIG:
	case WMS_ERR_INTERNAL:
	default:
		return st; /* nothing a fixture can replay: passed on as is */
	}
	why[0] = '\0';
	wst = record_exchange(rec, req, resp, fault, elapsed_ms, why, sizeof(why));
	/* The inner transport's error comes first; a write failure only
	 * replaces success, so a test notices the missing fixture. */
	if (wst != WMS_OK && st == WMS_OK)
		return wms__fail(err, WMS_ERR_FIXTURE, WMS_DELIVERY_ANSWERED,
				 "exchange answered but not recorded: %s", why);
	return st;
}

static void record_free(wms_transport *self)
{
	recorder *rec = (recorder *)self;
	size_t i;
	if (!rec)
		return;
	if (rec->inner && rec->inner->free)
		rec->inner->free(rec->inner);
	wms__free(rec->directory);
	wms__free(rec->prefix);
	for (i = 0; i < rec->volatile_count; i++)
		wms__free(rec->volatiles[i]);
	wms__free(rec->volatiles);
	pthread_mutex_destroy(&rec->lock);
	wms__free(rec);
}

wms_status wms_record_options_init(wms_record_options *opts, unsigned version)
{
	wms_record_options def = WMS_RECORD_OPTIONS_INIT;
	if (!opts || version != WMS_RECORD_OPTIONS_VERSION)
		return WMS_ERR_INVALID_ARG;
	*opts = def;
	return WMS_OK;
}

static wms_status check_record_options(const wms_record_options *o, wms_error *err)
{
	struct stat sb;
	size_t i;
	if (!o)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wms_record_transport_new: options are required (the directory)");
	if (o->version != WMS_RECORD_OPTIONS_VERSION)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options version %u is not supported (expected %u)", o->version,
				 WMS_RECORD_OPTIONS_VERSION);
	if (!o->directory || !*o->directory)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options: directory is required");
	if (stat(o->directory, &sb) != 0)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record directory %s: %s", o->directory, strerror(errno));
	if (!S_ISDIR(sb.st_mode))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record directory %s: not a directory", o->directory);
	if (o->prefix && (strchr(o->prefix, '/') || o->prefix[0] == '.' || strlen(o->prefix) > 128))
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options: prefix must not contain '/', start with '.', or exceed 128 bytes");
	if (o->volatile_count && !o->volatile_elements)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "record options: volatile_count is %zu but volatile_elements is NULL",
				 o->volatile_count);
	for (i = 0; i < o->volatile_count; i++) {
		const char *v = o->volatile_elements[i];
		if (!v || !*v || strchr(v, ':') || strpbrk(v, " \t\r\n<>&\""))
			return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
					 "record options: volatile_elements[%zu] is not an element local name", i);
	}
	return WMS_OK;
}

wms_status wms_record_transport_new(wms_transport **out, wms_transport *inner,
				    const wms_record_options *opts, wms_error *err)
{
	recorder *rec = NULL;
	size_t i;
	wms_status st;

	if (out)
		*out = NULL;
	wms_error_clear(err); /* an earlier call's error does not outlive a success */
	if (!out || !inner || !inner->send) {
		st = wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
			       "wms_record_transport_new: %s is NULL",
			       !out ? "out" : !inner ? "inner" : "inner->send");
		goto fail;
	}
	st = check_record_options(opts, err);
	if (st != WMS_OK)
		goto fail;
	wms__fx_xml_init();
	rec = wms__calloc(1, sizeof(*rec));
	if (!rec || pthread_mutex_init(&rec->lock, NULL) != 0) {
		wms__free(rec);
		st = wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
		goto fail;
	}
	rec->parent.version = WMS_TRANSPORT_VERSION;
	rec->parent.send = record_send;
	rec->parent.free = record_free;
	rec->inner = inner;
	inner = NULL;
	rec->name = opts->name;
	rec->name_ctx = opts->payload;
	rec->directory = wms__strdup(opts->directory);
	rec->prefix = wms__strdup(opts->prefix ? opts->prefix : "");
	rec->volatiles = wms__calloc(opts->volatile_count ? opts->volatile_count : 1,
				     sizeof(*rec->volatiles));
	if (!rec->directory || !rec->prefix || !rec->volatiles)
		goto nomem;
	for (i = 0; i < opts->volatile_count; i++) {
		rec->volatiles[i] = wms__strdup(opts->volatile_elements[i]);
		if (!rec->volatiles[i])
			goto nomem;
		rec->volatile_count++;
	}
	*out = &rec->parent;
	return WMS_OK;
nomem:
	record_free(&rec->parent);
	return wms__fail(err, WMS_ERR_NOMEM, WMS_DELIVERY_NOT_SENT, "out of memory");
fail:
	if (inner && inner->free)
		inner->free(inner);
	return st;
}

size_t wms_record_transport_written(wms_transport *transport)
{
	recorder *rec = (recorder *)transport;
	size_t n;
	if (!transport || transport->send != record_send)
		return 0;
	pthread_mutex_lock(&rec->lock);
	n = rec->written;
	pthread_mutex_unlock(&rec->lock);
	return n;
}
