/*
 * Certificates for the TLS tests, made at test time with OpenSSL's C API
 * (EC P-256 keys) in a temporary directory that tls_pki_free removes: no key
 * or certificate is checked in, none outlives the test program.
 */
#ifndef WMS_TEST_TLS_PKI_H
#define WMS_TEST_TLS_PKI_H

#include <stddef.h>

#define TLS_PKI_PATH_MAX 256
#define TLS_PKI_MAX_FILES 48

/* One key pair and its certificate, both as PEM files. */
typedef struct tls_cred {
	char cert_file[TLS_PKI_PATH_MAX];
	char key_file[TLS_PKI_PATH_MAX];
	char cn[64];
} tls_cred;

typedef struct tls_pki {
	char dir[TLS_PKI_PATH_MAX];   /* the temporary directory */
	tls_cred ca;                  /* the test CA the client trusts */
	tls_cred server;              /* by ca: SAN IP:127.0.0.1, DNS:localhost */
	tls_cred self_signed;         /* SAN IP:127.0.0.1, issued by itself */
	tls_cred expired;             /* by ca, right SAN, validity ended yesterday */
	tls_cred wrong_host;          /* by ca, SAN DNS:wms.example.invalid, IP:192.0.2.7 */
	tls_cred client_ca;           /* the CA the server trusts for client certificates */
	tls_cred client;              /* by client_ca, extendedKeyUsage clientAuth */
	tls_cred rogue_ca;            /* trusted by nobody */
	tls_cred rogue_client;        /* by rogue_ca */
	char ca_dir[TLS_PKI_PATH_MAX];       /* <subject hash>.0 -> the test CA (c_rehash layout) */
	char ca_dir_unhashed[TLS_PKI_PATH_MAX]; /* the test CA as ca.pem only: no hash name */
	/* the server key's SubjectPublicKeyInfo: "sha256//BASE64", PEM and DER files */
	char server_pin[128];
	char server_pubkey_pem[TLS_PKI_PATH_MAX];
	char server_pubkey_der[TLS_PKI_PATH_MAX];
	char other_pubkey_pem[TLS_PKI_PATH_MAX]; /* another key's: must not match */
	/* everything created, removed in reverse order */
	char created[TLS_PKI_MAX_FILES][TLS_PKI_PATH_MAX];
	size_t created_count;
} tls_pki;

/* Make every certificate and file above. 0 on success; on failure the
 * reason is on stderr and whatever was created is removed. */
int tls_pki_make(tls_pki *p);
/* Remove every file and directory tls_pki_make created. */
void tls_pki_free(tls_pki *p);

/* The whole content of a file, NUL-terminated, malloc'd; NULL on error. */
char *tls_read_file(const char *path, size_t *len);

#endif
