/* A redis-server for a test: started by the test on a unix socket in its
 * own temporary directory (or a free loopback port), stopped by its PID.
 * The binary is $WMS_REDIS_SERVER or redis-server on PATH. */
#ifndef WMS_TEST_REDIS_SERVER_H
#define WMS_TEST_REDIS_SERVER_H

#include <sys/types.h>
#include <hiredis/hiredis.h>

typedef struct rs_server {
	pid_t pid;
	int tcp;           /* 1: a loopback port, 0: a unix socket */
	int port;
	char dir[64];      /* its own mkdtemp directory */
	char sock[128];
	char url[192];     /* redis:// or unix:// URL for wms_shared_options (no credentials) */
	/* From rs_opts (rs_start: none). rs_cmd and rs_connect AUTH with
	 * `password` as the default user; rs_restart keeps them all. */
	char password[64];
	char user[64];
	char user_password[64];
	int databases;
} rs_server;

/* What rs_start_opts starts the server with; NULL or zero fields: none. */
typedef struct rs_opts {
	const char *password;      /* --requirepass: the default user's password */
	const char *user;          /* an ACL user: --user NAME on >PASS ~* &* +@all */
	const char *user_password; /* its password (required with user) */
	int databases;             /* --databases (0: Redis's 16) */
} rs_opts;

/* Start; 0 on success (ready: it answered PING). */
int rs_start(rs_server *s, int tcp);
/* rs_start with options (NULL: as rs_start). Names and passwords are
 * printable without blanks, at most 63 bytes. */
int rs_start_opts(rs_server *s, int tcp, const rs_opts *o);
/* SIGTERM and wait, then remove the directory. NULL-safe, idempotent. */
void rs_stop(rs_server *s);
/* kill -9 (and reap); rs_restart starts it again at the same address. */
void rs_kill9(rs_server *s);
int rs_restart(rs_server *s);
/* kill -STOP / -CONT. */
void rs_freeze(rs_server *s);
void rs_thaw(rs_server *s);
/* A command on a fresh connection (NULL on failure); free the reply. */
redisReply *rs_cmd(const rs_server *s, const char *fmt, ...);
/* HGET KEY FIELD as a number; -1 when absent, not a string or no reply. */
long long rs_hget_int(const rs_server *s, const char *key, const char *field);
/* A connection of one's own (for MONITOR); NULL on failure. */
redisContext *rs_connect(const rs_server *s);

#endif
