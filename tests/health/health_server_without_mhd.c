/* src/health_server.c as a build without libmicrohttpd
 * (-Dhealth_server=disabled) compiles it, linked into
 * test_health_disabled ahead of libwms.a's own copy: the refusal of that
 * build is checked in every build, without configuring a second one. */
#undef WMS_HAVE_MHD
#define WMS_HAVE_MHD 0
#include "health_server.c"
