#ifndef BUCKIA_CZLIB_SHIM_H
#define BUCKIA_CZLIB_SHIM_H
#include <zlib.h>

/* deflateInit2 and inflateInit2 are macros; Swift can only call functions. */
static inline int buckia_deflateInit2(z_streamp strm, int level, int windowBits, int memLevel) {
    return deflateInit2(strm, level, Z_DEFLATED, windowBits, memLevel, Z_DEFAULT_STRATEGY);
}

static inline int buckia_inflateInit2(z_streamp strm, int windowBits) {
    return inflateInit2(strm, windowBits);
}
#endif
