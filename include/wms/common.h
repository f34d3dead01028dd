/*
 * libwms - common definitions: export macro, version.
 */
#ifndef WMS_COMMON_H
#define WMS_COMMON_H

#include <stddef.h>
#include <stdint.h>

#if defined(WMS_BUILDING_LIBRARY) && defined(__GNUC__)
#  define WMS_EXTERN(type) __attribute__((visibility("default"))) type
#else
#  define WMS_EXTERN(type) type
#endif

#ifdef __cplusplus
#  define WMS_BEGIN_DECL extern "C" {
#  define WMS_END_DECL }
#else
#  define WMS_BEGIN_DECL
#  define WMS_END_DECL
#endif

#define WMS_VERSION_MAJOR 0
#define WMS_VERSION_MINOR 3
#define WMS_VERSION_PATCH 2
#define WMS_VERSION "0.3.2"

WMS_BEGIN_DECL

/** The library's version string, e.g. "0.3.0". */
WMS_EXTERN(const char *) wms_version(void);

WMS_END_DECL

#endif
