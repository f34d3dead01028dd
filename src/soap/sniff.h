/* A reply's bytes before libxml2 reads them (soap/sniff.c), and the small
 * locale-independent byte helpers the parser and the reply readers share.
 * Private to src/soap/. */
#ifndef WMS_SOAP_SNIFF_H
#define WMS_SOAP_SNIFF_H

#include <stddef.h>
#include <stdint.h>
#include "soap/soap.h"

/* XML white space: space, tab, CR, LF. */
int wms__xml_space(unsigned char c);
/* Whether [p, end) starts with `lit` (lower-case ASCII), ignoring case. */
int wms__starts_ci(const char *p, const char *end, const char *lit);

/* The media type is text/html (a proxy's or server's error page); `ct` may
 * be NULL. */
int wms__media_is_html(const char *ct);

/* The room for a Content-Type's charset (longer ones are ignored). */
#define WMS__SNIFF_CHARSET_MAX 64

/* Everything the reply parser checks of [buf, buf + len) before libxml2
 * reads a byte: refused with WMS_ERR_NOT_XML when it is empty, text, an
 * HTML page, or in an encoding its byte order mark and XML declaration
 * disagree on or that libwms does not read; then the structural limits of
 * soap/limits.h (as wms__xml_check_limits, reported on err). On WMS_OK,
 * *encoding is the encoding the parser is to be given (the Content-Type's
 * charset, copied into `charset`, when neither a BOM nor the declaration
 * decides), or NULL. `buf` may be NULL only when len is 0; `content_type`
 * may be NULL; `deadline_ns` as wms__parse_reply_ws's. */
wms_status wms__sniff_reply(const char *buf, size_t len, const char *content_type,
			    uint64_t deadline_ns, char charset[WMS__SNIFF_CHARSET_MAX],
			    const char **encoding, wms_error *err);

#endif
