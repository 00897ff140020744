#ifndef BUCKIA_CXATTR_SHIM_H
#define BUCKIA_CXATTR_SHIM_H
/* Extended attributes of a path, never through a final link: Linux's l*xattr, or Darwin's with
 * XATTR_NOFOLLOW (Swift's Glibc module does not carry <sys/xattr.h>, and the two platforms'
 * signatures differ). buckia_no_attribute is the errno of an attribute that is not there.
 * Every platform builds this header; the __APPLE__ branch is never compiled on Buckia's own
 * machines (Docs/Platforms.md lists it). */
#include <errno.h>
#include <sys/types.h>
#include <sys/xattr.h>
#ifdef __APPLE__
static inline ssize_t buckia_getxattr(const char *path, const char *name, void *value, size_t size) { return getxattr(path, name, value, size, 0, XATTR_NOFOLLOW); }
static inline int buckia_setxattr(const char *path, const char *name, const void *value, size_t size) { return setxattr(path, name, value, size, 0, XATTR_NOFOLLOW); }
static inline int buckia_removexattr(const char *path, const char *name) { return removexattr(path, name, XATTR_NOFOLLOW); }
static inline ssize_t buckia_fgetxattr(int fd, const char *name, void *value, size_t size) { return fgetxattr(fd, name, value, size, 0, 0); }
static inline int buckia_fsetxattr(int fd, const char *name, const void *value, size_t size) { return fsetxattr(fd, name, value, size, 0, 0); }
static inline int buckia_fremovexattr(int fd, const char *name) { return fremovexattr(fd, name, 0); }
static inline ssize_t buckia_flistxattr(int fd, char *list, size_t size) { return flistxattr(fd, list, size, 0); }
static const int buckia_no_attribute = ENOATTR;
#else
static inline ssize_t buckia_getxattr(const char *path, const char *name, void *value, size_t size) { return lgetxattr(path, name, value, size); }
static inline int buckia_setxattr(const char *path, const char *name, const void *value, size_t size) { return lsetxattr(path, name, value, size, 0); }
static inline int buckia_removexattr(const char *path, const char *name) { return lremovexattr(path, name); }
static inline ssize_t buckia_fgetxattr(int fd, const char *name, void *value, size_t size) { return fgetxattr(fd, name, value, size); }
static inline int buckia_fsetxattr(int fd, const char *name, const void *value, size_t size) { return fsetxattr(fd, name, value, size, 0); }
static inline int buckia_fremovexattr(int fd, const char *name) { return fremovexattr(fd, name); }
static inline ssize_t buckia_flistxattr(int fd, char *list, size_t size) { return flistxattr(fd, list, size); }
static const int buckia_no_attribute = ENODATA;
#endif
#endif
