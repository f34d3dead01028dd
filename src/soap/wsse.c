/* WS-Security: the UsernameToken header (PasswordText, or PasswordDigest
 * with a fresh nonce and created per message), and its settings' checks. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <libxml/tree.h>
#include "soap/soap.h"
#include "soap/wsse.h"
#include "util/base64.h"

#define X(s) ((const xmlChar *)(s))

#define WSU_NS "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-wssecurity-utility-1.0.xsd"
#define WSSE_PROFILE "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-username-token-profile-1.0"
#define WSSE_B64 "http://docs.oasis-open.org/wss/2004/01/oasis-200401-wss-soap-message-security-1.0#Base64Binary"

/* Fill the Header with a UsernameToken: fresh 16-byte nonce and created per message; the digest
 * is Base64(SHA-1(nonce + created + password)) (UsernameToken profile 1.0). */
wms_status wms__wsse_add(xmlNodePtr header, xmlNsPtr soap, const wms__wsse *w)
{
	unsigned char nonce[16], digest[SHA_DIGEST_LENGTH];
	char nonce64[32], digest64[32], created[40];
	xmlNodePtr sec, tok, pw, el;
	xmlNsPtr wsse, wsu;
	struct timespec ts;
	struct tm tm;
	size_t got = 0;

	if (!(sec = xmlNewChild(header, NULL, X("Security"), NULL)) ||
	    !(wsse = xmlNewNs(sec, X(WMS__WSSE_NS), X("wsse"))) ||
	    !(wsu = xmlNewNs(sec, X(WSU_NS), X("wsu"))))
		return WMS_ERR_NOMEM;
	xmlSetNs(sec, wsse);
	if (!xmlSetNsProp(sec, soap, X("mustUnderstand"), X("1")) ||
	    !(tok = xmlNewChild(sec, wsse, X("UsernameToken"), NULL)) ||
	    !xmlNewTextChild(tok, wsse, X("Username"), X(w->username)))
		return WMS_ERR_NOMEM;
	if (w->mode == WMS_WSSE_PASSWORD_TEXT) {
		if (!(pw = xmlNewTextChild(tok, wsse, X("Password"), X(w->password))) ||
		    !xmlSetProp(pw, X("Type"), X(WSSE_PROFILE "#PasswordText")))
			return WMS_ERR_NOMEM;
		return WMS_OK;
	}
	while (got < sizeof(nonce)) {
		ssize_t n = getrandom(nonce + got, sizeof(nonce) - got, 0);
		if (n < 0 && errno != EINTR)
			return WMS_ERR_INTERNAL;
		got += n > 0 ? (size_t)n : 0;
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	snprintf(created, sizeof(created), "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ",
		 (tm.tm_year + 1900) % 10000, (tm.tm_mon + 1) % 100, tm.tm_mday % 100,
		 tm.tm_hour % 100, tm.tm_min % 100, tm.tm_sec % 100,
		 (int)(ts.tv_nsec / 1000000L) % 1000);
	{
		EVP_MD_CTX *md = EVP_MD_CTX_new();
		unsigned int len = 0;
		int ok = md && EVP_DigestInit_ex(md, EVP_sha1(), NULL) &&
			 EVP_DigestUpdate(md, nonce, sizeof(nonce)) &&
			 EVP_DigestUpdate(md, created, strlen(created)) &&
			 EVP_DigestUpdate(md, w->password, strlen(w->password)) &&
			 EVP_DigestFinal_ex(md, digest, &len) && len == sizeof(digest);
		EVP_MD_CTX_free(md);
		if (!ok)
			return WMS_ERR_INTERNAL;
	}
	if (wms__base64_encode(nonce64, sizeof(nonce64), nonce, sizeof(nonce)) != WMS_OK ||
	    wms__base64_encode(digest64, sizeof(digest64), digest, sizeof(digest)) != WMS_OK)
		return WMS_ERR_INTERNAL; /* the buffers are sized for them */
	OPENSSL_cleanse(digest, sizeof(digest));
	if (!(pw = xmlNewTextChild(tok, wsse, X("Password"), X(digest64))) ||
	    !xmlSetProp(pw, X("Type"), X(WSSE_PROFILE "#PasswordDigest")) ||
	    !(el = xmlNewTextChild(tok, wsse, X("Nonce"), X(nonce64))) ||
	    !xmlSetProp(el, X("EncodingType"), X(WSSE_B64)) ||
	    !xmlNewTextChild(tok, wsu, X("Created"), X(created)))
		return WMS_ERR_NOMEM;
	return WMS_OK;
}


wms_status wms__wsse_check(const wms__wsse *w, wms_error *err)
{
	wms_status rc;
	if (!w || w->mode == WMS_WSSE_NONE)
		return WMS_OK;
	if ((w->mode != WMS_WSSE_PASSWORD_TEXT && w->mode != WMS_WSSE_PASSWORD_DIGEST) ||
	    !w->username || !*w->username || !w->password)
		return wms__fail(err, WMS_ERR_INVALID_ARG, WMS_DELIVERY_NOT_SENT,
				 "wsse: a mode, a username and a password are required");
	/* Both go into the envelope as text (a digest only hashes the
	 * password): what XML cannot carry is refused, not sent malformed. */
	rc = wms__validate_text(w->username, "wsse username", 0, err);
	if (rc == WMS_OK && w->mode == WMS_WSSE_PASSWORD_TEXT && *w->password)
		rc = wms__validate_text(w->password, "wsse password", 1, err);
	return rc;
}
