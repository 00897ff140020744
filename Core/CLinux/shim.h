#ifndef BUCKIA_CLINUX_SHIM_H
#define BUCKIA_CLINUX_SHIM_H
/* What Swift's Glibc module leaves out. Everything here is a no-op off Linux. */
#ifdef __linux__
#include <malloc.h>
static inline int buckia_limit_malloc_arenas(int count) { return mallopt(M_ARENA_MAX, count); }
#else
static inline int buckia_limit_malloc_arenas(int count) { (void)count; return 1; }
#endif
#endif
