/* What wms_global_init (global.c) runs of each backend: its one-time
 * set-up, routed through the allocation seam. Never installed. */
#ifndef WMS_INIT_H
#define WMS_INIT_H

#include "wms/errors.h"

/* soap/xml.c: NULL while libxml2's allocator can still be switched, else
 * why not. */
const char *wms__xml_route_obstacle(void);
/* soap/xml.c: run libxml2's one-time set-up now; *routed: whether it took
 * the wms__lib_* functions. */
wms_status wms__xml_global_init(int *routed);

/* transport/curl.c: run libcurl's one-time global init now; *routed:
 * whether libcurl took the wms__lib_* functions. */
wms_status wms__curl_global_init(int *routed);

#endif
