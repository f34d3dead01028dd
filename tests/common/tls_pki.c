/* The TLS tests' certificates (see tls_pki.h). */
#include "tls_pki.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#define DAY (24L * 60L * 60L)

/* A key and the certificate made for it; the issuer of later ones. */
typedef struct issued {
	EVP_PKEY *key;
	X509 *cert;
} issued;

static void issued_free(issued *i)
{
	X509_free(i->cert);
	EVP_PKEY_free(i->key);
	i->cert = NULL;
	i->key = NULL;
}

static int complain(const char *what, const char *detail)
{
	unsigned long e = ERR_get_error();
	char ossl[256] = "";
	if (e)
		ERR_error_string_n(e, ossl, sizeof(ossl));
	fprintf(stderr, "tls_pki: %s%s%s%s%s\n", what, detail ? " " : "", detail ? detail : "",
		ossl[0] ? ": " : "", ossl);
	ERR_clear_error();
	return -1;
}

/* Remember a path for tls_pki_free (files and directories alike). */
static int track(tls_pki *p, const char *path)
{
	size_t n = strlen(path);
	if (p->created_count == TLS_PKI_MAX_FILES || n >= TLS_PKI_PATH_MAX)
		return complain("cannot keep track of", path);
	memcpy(p->created[p->created_count++], path, n + 1);
	return 0;
}

static int path_in(char *out, const char *dir, const char *name)
{
	int n = snprintf(out, TLS_PKI_PATH_MAX, "%s/%s", dir, name);
	return n > 0 && n < TLS_PKI_PATH_MAX ? 0 : complain("path too long:", name);
}

/* A new file, never an existing one; keys get 0600 like real ones. */
static FILE *create_file(tls_pki *p, const char *path, mode_t mode)
{
	FILE *f;
	int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, mode);
	if (fd < 0) {
		complain("cannot create", path);
		return NULL;
	}
	if (track(p, path) != 0 || !(f = fdopen(fd, "w"))) {
		close(fd);
		return NULL;
	}
	return f;
}

static int close_file(FILE *f, int ok, const char *path)
{
	if (fclose(f) != 0)
		ok = 0;
	return ok ? 0 : complain("cannot write", path);
}

static int write_cert(tls_pki *p, const char *path, X509 *cert)
{
	FILE *f = create_file(p, path, 0644);
	return f ? close_file(f, PEM_write_X509(f, cert) == 1, path) : -1;
}

static int write_key(tls_pki *p, const char *path, EVP_PKEY *key)
{
	FILE *f = create_file(p, path, 0600);
	return f ? close_file(f, PEM_write_PrivateKey(f, key, NULL, NULL, 0, NULL, NULL) == 1,
			      path)
		 : -1;
}

static int add_ext(X509 *cert, X509 *issuer, int nid, const char *value)
{
	X509V3_CTX ctx;
	X509_EXTENSION *ex;
	int ok;
	X509V3_set_ctx_nodb(&ctx);
	X509V3_set_ctx(&ctx, issuer, cert, NULL, NULL, 0);
	ex = X509V3_EXT_conf_nid(NULL, &ctx, nid, value);
	if (!ex)
		return complain("bad extension", value);
	ok = X509_add_ext(cert, ex, -1);
	X509_EXTENSION_free(ex);
	return ok ? 0 : complain("cannot add extension", value);
}

typedef struct cert_spec {
	const char *stem;   /* file names: <stem>.pem, <stem>-key.pem */
	const char *cn;
	const issued *issuer; /* NULL: self-signed */
	int is_ca;
	const char *san;    /* subjectAltName, or NULL */
	const char *eku;    /* extendedKeyUsage, or NULL */
	long from_s;        /* validity relative to now, seconds */
	long until_s;
} cert_spec;

/* A fresh P-256 key and a certificate for it as `spec` says; both written
 * to the directory, and kept in `out` when it is an issuer of later ones. */
static int make_cert(tls_pki *p, tls_cred *cred, const cert_spec *spec, issued *out)
{
	static long serial = 1000;
	issued me = { NULL, NULL };
	X509 *issuer_cert;
	EVP_PKEY *issuer_key;
	X509_NAME *name;
	int rc = -1;

	snprintf(cred->cn, sizeof(cred->cn), "%s", spec->cn);
	if (path_in(cred->cert_file, p->dir, spec->stem) != 0 ||
	    strlen(cred->cert_file) + 9 > sizeof(cred->cert_file))
		return -1;
	snprintf(cred->key_file, sizeof(cred->key_file), "%s-key.pem", cred->cert_file);
	strcat(cred->cert_file, ".pem");

	me.key = EVP_EC_gen("P-256");
	me.cert = X509_new();
	if (!me.key || !me.cert) {
		complain("cannot make a key for", spec->cn);
		goto done;
	}
	issuer_cert = spec->issuer ? spec->issuer->cert : me.cert;
	issuer_key = spec->issuer ? spec->issuer->key : me.key;
	name = X509_get_subject_name(me.cert);
	if (!X509_set_version(me.cert, 2) ||
	    !ASN1_INTEGER_set(X509_get_serialNumber(me.cert), serial++) ||
	    !X509_gmtime_adj(X509_getm_notBefore(me.cert), spec->from_s) ||
	    !X509_gmtime_adj(X509_getm_notAfter(me.cert), spec->until_s) ||
	    !X509_set_pubkey(me.cert, me.key) ||
	    !X509_NAME_add_entry_by_txt(name, "O", MBSTRING_ASC,
					(const unsigned char *)"libwms tests", -1, -1, 0) ||
	    !X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC,
					(const unsigned char *)spec->cn, -1, -1, 0) ||
	    !X509_set_issuer_name(me.cert, X509_get_subject_name(issuer_cert))) {
		complain("cannot fill the certificate of", spec->cn);
		goto done;
	}
	/* What a real CA puts in: OpenSSL's chain checks look at these. */
	if (add_ext(me.cert, issuer_cert, NID_basic_constraints,
		    spec->is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE") != 0 ||
	    add_ext(me.cert, issuer_cert, NID_key_usage,
		    spec->is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature") !=
		    0 ||
	    add_ext(me.cert, issuer_cert, NID_subject_key_identifier, "hash") != 0 ||
	    add_ext(me.cert, issuer_cert, NID_authority_key_identifier, "keyid:always") != 0 ||
	    (spec->san && add_ext(me.cert, issuer_cert, NID_subject_alt_name, spec->san) != 0) ||
	    (spec->eku && add_ext(me.cert, issuer_cert, NID_ext_key_usage, spec->eku) != 0))
		goto done;
	if (X509_sign(me.cert, issuer_key, EVP_sha256()) <= 0) {
		complain("cannot sign the certificate of", spec->cn);
		goto done;
	}
	if (write_cert(p, cred->cert_file, me.cert) != 0 ||
	    write_key(p, cred->key_file, me.key) != 0)
		goto done;
	if (out) {
		*out = me;
		me.key = NULL;
		me.cert = NULL;
	}
	rc = 0;
done:
	issued_free(&me);
	return rc;
}

/* The pin libcurl wants: sha256// + base64(SHA-256(DER SubjectPublicKeyInfo)),
 * and the public key as a PEM and a DER file. */
static int write_pin(tls_pki *p, EVP_PKEY *key, char *pin, size_t pin_size, const char *pem,
		     const char *der_path)
{
	unsigned char *der = NULL, md[EVP_MAX_MD_SIZE], b64[2 * EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;
	int n = i2d_PUBKEY(key, &der), rc = -1;
	FILE *f;

	if (n <= 0 || !EVP_Digest(der, (size_t)n, md, &mdlen, EVP_sha256(), NULL)) {
		complain("cannot hash the public key", NULL);
		goto done;
	}
	/* SHA-256: 44 base64 characters */
	if (EVP_EncodeBlock(b64, md, (int)mdlen) != 44 || (pin && pin_size < 8 + 44 + 1)) {
		complain("unexpected digest size", NULL);
		goto done;
	}
	if (pin) {
		memcpy(pin, "sha256//", 8);
		memcpy(pin + 8, b64, 45);
	}
	if (!(f = create_file(p, pem, 0644)) || close_file(f, PEM_write_PUBKEY(f, key) == 1, pem))
		goto done;
	if (der_path && (!(f = create_file(p, der_path, 0644)) ||
			 close_file(f, fwrite(der, 1, (size_t)n, f) == (size_t)n, der_path)))
		goto done;
	rc = 0;
done:
	OPENSSL_free(der);
	return rc;
}

/* ca_path layouts: the c_rehash one (<hash>.0 naming the CA) and one that
 * holds the same CA under a name OpenSSL never looks up. */
static int write_ca_dirs(tls_pki *p, X509 *ca)
{
	char link[TLS_PKI_PATH_MAX + 16], plain[TLS_PKI_PATH_MAX + 16];

	if (path_in(p->ca_dir, p->dir, "capath") != 0 ||
	    path_in(p->ca_dir_unhashed, p->dir, "capath-unhashed") != 0)
		return -1;
	if (mkdir(p->ca_dir, 0700) != 0 || track(p, p->ca_dir) != 0)
		return complain("cannot create", p->ca_dir);
	snprintf(link, sizeof(link), "%s/%08lx.0", p->ca_dir, X509_subject_name_hash(ca));
	if (symlink(p->ca.cert_file, link) != 0 || track(p, link) != 0)
		return complain("cannot link", link);
	if (mkdir(p->ca_dir_unhashed, 0700) != 0 || track(p, p->ca_dir_unhashed) != 0)
		return complain("cannot create", p->ca_dir_unhashed);
	snprintf(plain, sizeof(plain), "%s/ca.pem", p->ca_dir_unhashed);
	return write_cert(p, plain, ca);
}

int tls_pki_make(tls_pki *p)
{
	issued ca = { NULL, NULL }, client_ca = { NULL, NULL }, rogue_ca = { NULL, NULL };
	issued server = { NULL, NULL }, other = { NULL, NULL };
	const char *tmp = getenv("TMPDIR");
	char tmpl[TLS_PKI_PATH_MAX];
	int rc = -1;

	memset(p, 0, sizeof(*p));
	snprintf(tmpl, sizeof(tmpl), "%s/libwms-tls-XXXXXX", tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(tmpl))
		return complain("cannot create a directory like", tmpl);
	snprintf(p->dir, sizeof(p->dir), "%s", tmpl);
	if (track(p, p->dir) != 0)
		goto done;

	{
		const cert_spec specs[] = {
			{ "ca", "libwms test CA", NULL, 1, NULL, NULL, -DAY, 30 * DAY },
			{ "client-ca", "libwms test client CA", NULL, 1, NULL, NULL, -DAY, 30 * DAY },
			{ "rogue-ca", "untrusted CA", NULL, 1, NULL, NULL, -DAY, 30 * DAY },
		};
		if (make_cert(p, &p->ca, &specs[0], &ca) != 0 ||
		    make_cert(p, &p->client_ca, &specs[1], &client_ca) != 0 ||
		    make_cert(p, &p->rogue_ca, &specs[2], &rogue_ca) != 0)
			goto done;
	}
	{
		const cert_spec specs[] = {
			{ "server", "127.0.0.1", &ca, 0, "IP:127.0.0.1,DNS:localhost", "serverAuth",
			  -DAY, 30 * DAY },
			{ "self-signed", "127.0.0.1", NULL, 0, "IP:127.0.0.1,DNS:localhost",
			  "serverAuth", -DAY, 30 * DAY },
			{ "expired", "127.0.0.1", &ca, 0, "IP:127.0.0.1,DNS:localhost", "serverAuth",
			  -30 * DAY, -DAY },
			{ "wrong-host", "wms.example.invalid", &ca, 0,
			  "DNS:wms.example.invalid,IP:192.0.2.7", "serverAuth", -DAY, 30 * DAY },
			{ "client", "fulfillment-client", &client_ca, 0, NULL, "clientAuth", -DAY,
			  30 * DAY },
			{ "rogue-client", "fulfillment-client", &rogue_ca, 0, NULL, "clientAuth", -DAY,
			  30 * DAY },
		};
		tls_cred unused;
		if (make_cert(p, &p->server, &specs[0], &server) != 0 ||
		    make_cert(p, &p->self_signed, &specs[1], NULL) != 0 ||
		    make_cert(p, &p->expired, &specs[2], NULL) != 0 ||
		    make_cert(p, &p->wrong_host, &specs[3], NULL) != 0 ||
		    make_cert(p, &p->client, &specs[4], NULL) != 0 ||
		    make_cert(p, &p->rogue_client, &specs[5], NULL) != 0)
			goto done;
		/* a key of the same type that is not the server's, for a pin that
		 * must not match */
		{
			const cert_spec o = { "other", "other", &ca, 0, NULL, NULL, -DAY, DAY };
			if (make_cert(p, &unused, &o, &other) != 0)
				goto done;
		}
	}
	if (path_in(p->server_pubkey_pem, p->dir, "server-pubkey.pem") != 0 ||
	    path_in(p->server_pubkey_der, p->dir, "server-pubkey.der") != 0 ||
	    path_in(p->other_pubkey_pem, p->dir, "other-pubkey.pem") != 0 ||
	    write_pin(p, server.key, p->server_pin, sizeof(p->server_pin), p->server_pubkey_pem,
		      p->server_pubkey_der) != 0 ||
	    write_pin(p, other.key, NULL, 0, p->other_pubkey_pem, NULL) != 0 ||
	    write_ca_dirs(p, ca.cert) != 0)
		goto done;
	rc = 0;
done:
	issued_free(&ca);
	issued_free(&client_ca);
	issued_free(&rogue_ca);
	issued_free(&server);
	issued_free(&other);
	if (rc != 0)
		tls_pki_free(p);
	return rc;
}

void tls_pki_free(tls_pki *p)
{
	while (p->created_count) {
		const char *path = p->created[--p->created_count];
		if (remove(path) != 0)
			fprintf(stderr, "tls_pki: cannot remove %s: %s\n", path, strerror(errno));
	}
}

char *tls_read_file(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	char *buf = NULL, *grown;
	size_t n = 0, cap = 0, got;

	if (!f)
		return NULL;
	do {
		if (cap - n < 4096) {
			cap = cap ? cap * 2 : 8192;
			grown = realloc(buf, cap + 1);
			if (!grown) {
				free(buf);
				fclose(f);
				return NULL;
			}
			buf = grown;
		}
		got = fread(buf + n, 1, cap - n, f);
		n += got;
	} while (got);
	if (ferror(f)) {
		free(buf);
		fclose(f);
		return NULL;
	}
	fclose(f);
	buf[n] = '\0';
	if (len)
		*len = n;
	return buf;
}
