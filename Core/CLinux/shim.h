#ifndef BUCKIA_CLINUX_SHIM_H
#define BUCKIA_CLINUX_SHIM_H
/* What Swift's Glibc module leaves out: Linux's fast paths. A dependency on Linux only (and not
 * in the portable build); Swift callers go through BuckiaCore's SystemCalls, whose POSIX path
 * every other build takes. Its non-Linux branches are never built any more (left from
 * before the switch; to be trimmed). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>
#ifdef __linux__
#include <malloc.h>
static inline int buckia_limit_malloc_arenas(int count) { return mallopt(M_ARENA_MAX, count); }
#else
static inline int buckia_limit_malloc_arenas(int count) { (void)count; return 1; }
#endif

/* The kernel's id of the calling thread (what /proc/self/task lists), or -1 off Linux. */
#ifdef __linux__
#include <sys/prctl.h>
#include <sys/syscall.h>
static inline int buckia_thread_id(void) { return (int)syscall(SYS_gettid); }
/* Names the calling thread as ps, top and /proc/self/task/N/comm show it (15 bytes at most);
 * Foundation's Thread.name does not reach the kernel on Linux. */
static inline void buckia_name_thread(const char *name) { (void)prctl(PR_SET_NAME, name, 0, 0, 0); }
#else
static inline int buckia_thread_id(void) { return -1; }
static inline void buckia_name_thread(const char *name) { (void)name; }
#endif

/* Flushes every file system write made so far on the file system holding `fd` (Linux
 * syncfs); elsewhere the whole system's (sync), which is slower but as safe. */
#ifdef __linux__
int syncfs(int fd);
static inline int buckia_syncfs(int fd) { return syncfs(fd); }
#else
static inline int buckia_syncfs(int fd) { (void)fd; sync(); return 0; }
#endif

/* Writes the byte range [offset, offset + count) of `fd` to the device and waits for it
 * (Linux sync_file_range): flushing a large file in pieces, so the kernel never holds much of
 * it dirty at once and another program's fsync does not wait behind all of it. Not a
 * durability barrier (no metadata, no device cache flush): an fsync still ends the work.
 * Elsewhere: fdatasync, or fsync where there is none. */
#ifdef __linux__
#ifndef SYNC_FILE_RANGE_WAIT_BEFORE
#define SYNC_FILE_RANGE_WAIT_BEFORE 1
#define SYNC_FILE_RANGE_WRITE 2
#define SYNC_FILE_RANGE_WAIT_AFTER 4
#endif
int sync_file_range(int fd, off_t offset, off_t count, unsigned int flags);
static inline int buckia_sync_range(int fd, long long offset, long long count) {
    return sync_file_range(fd, (off_t)offset, (off_t)count, SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
}
/* Asks the kernel to start writing the byte range to the device and returns at once
 * (SYNC_FILE_RANGE_WRITE alone): a later fsync then finds most of the file written. A hint;
 * elsewhere it does nothing. */
static inline int buckia_start_writeback(int fd, long long offset, long long count) {
    return sync_file_range(fd, (off_t)offset, (off_t)count, SYNC_FILE_RANGE_WRITE);
}
#elif defined(__APPLE__)
static inline int buckia_sync_range(int fd, long long offset, long long count) { (void)offset; (void)count; return fsync(fd); }
static inline int buckia_start_writeback(int fd, long long offset, long long count) { (void)fd; (void)offset; (void)count; return 0; }
#else
static inline int buckia_sync_range(int fd, long long offset, long long count) { (void)offset; (void)count; return fdatasync(fd); }
static inline int buckia_start_writeback(int fd, long long offset, long long count) { (void)fd; (void)offset; (void)count; return 0; }
#endif

/* A file with no name in the folder `folder` (relative to dirfd; "." for dirfd itself),
 * through O_TMPFILE: nobody else can see or open it, and it vanishes with its last descriptor,
 * so a writer killed at any moment leaves nothing. -1 with errno where O_TMPFILE is missing
 * (EOPNOTSUPP, EISDIR, EINVAL). Naming it needs /proc. */
static inline int buckia_create_unnamed(int dirfd, const char *folder, int flags, mode_t mode) {
#ifdef __linux__
#ifndef O_TMPFILE
#define O_TMPFILE (020000000 | O_DIRECTORY)
#endif
    int fd;
    do { fd = openat(dirfd, folder, O_TMPFILE | flags | O_CLOEXEC, mode); } while (fd < 0 && errno == EINTR);
    return fd;
#else
    (void)dirfd; (void)folder; (void)flags; (void)mode;
    errno = EOPNOTSUPP;
    return -1;
#endif
}
/* Gives the unnamed file fd the name `name` in dirfd; fails with EEXIST if anything is there. */
static inline int buckia_link_unnamed(int fd, int dirfd, const char *name) {
#ifdef __linux__
    char link[48];
    snprintf(link, sizeof link, "/proc/self/fd/%d", fd);
    int linked;
    do { linked = linkat(AT_FDCWD, link, dirfd, name, AT_SYMLINK_FOLLOW); } while (linked != 0 && errno == EINTR);
    return linked;
#else
    (void)fd; (void)dirfd; (void)name;
    errno = EOPNOTSUPP;
    return -1;
#endif
}
/* Creates the file `name` (relative to `dirfd`) in `folder` already holding an exclusive
 * flock: it is created without a name (O_TMPFILE), locked, and only then linked under `name`,
 * so no other process ever sees it unlocked. With `epoch` it is dated 1970 until written (a
 * sweep that finds it empty and unlocked knows it is no new one). Returns the descriptor, or
 * -1 with errno set when the file system (or the platform) cannot do that; the caller then
 * creates the file with O_EXCL and locks it an instant later. */
static inline int buckia_create_locked_dated(int dirfd, const char *folder, const char *name, int access, mode_t mode, int epoch) {
#ifdef __linux__
    int fd = buckia_create_unnamed(dirfd, folder, access, mode);
    if (fd < 0) return -1;
    if (flock(fd, LOCK_EX | LOCK_NB) != 0) { int saved = errno; close(fd); errno = saved; return -1; }
    const struct timespec dates[2] = {{0, 0}, {0, 0}};
    if (epoch && futimens(fd, dates) != 0) { int saved = errno; close(fd); errno = saved; return -1; }
    if (buckia_link_unnamed(fd, dirfd, name) != 0) { int saved = errno; close(fd); errno = saved; return -1; }
    return fd;
#else
    (void)dirfd; (void)folder; (void)name; (void)access; (void)mode; (void)epoch;
    errno = EOPNOTSUPP;
    return -1;
#endif
}
/* buckia_create_locked_dated, dated 1970: the temporaries AtomicFile and the local provider
 * write. */
static inline int buckia_create_locked(int dirfd, const char *folder, const char *name, int access, mode_t mode) {
    return buckia_create_locked_dated(dirfd, folder, name, access, mode, 1);
}
/* Opens `path` (relative to dirfd, or absolute) as openat does, but fails with ELOOP if any
 * component is a symbolic link (Linux 5.6 openat2 with RESOLVE_NO_SYMLINKS): a whole path
 * walked without following links in one system call. -1 with errno ENOSYS where there is no
 * openat2 (an older kernel, a sandbox that filters it, another platform); the caller then
 * walks one folder at a time. */
#ifdef __linux__
#ifndef SYS_openat2
#define SYS_openat2 437
#endif
struct buckia_open_how { unsigned long long flags; unsigned long long mode; unsigned long long resolve; };
static inline int buckia_open_no_links(int dirfd, const char *path, int flags, mode_t mode) {
    struct buckia_open_how how = { (unsigned long long)(flags | O_CLOEXEC), (unsigned long long)mode, 0x04 /* RESOLVE_NO_SYMLINKS */ };
    int fd;
    do { fd = (int)syscall(SYS_openat2, dirfd, path, &how, sizeof how); } while (fd < 0 && errno == EINTR);
    /* A filter may refuse an unknown call with EPERM rather than ENOSYS: the same for the caller. */
    if (fd < 0 && errno == EPERM) errno = ENOSYS;
    return fd;
}
#else
static inline int buckia_open_no_links(int dirfd, const char *path, int flags, mode_t mode) {
    (void)dirfd; (void)path; (void)flags; (void)mode;
    errno = ENOSYS;
    return -1;
}
#endif

/* Creates `name` in the folder `dirfd` (it must not exist; mode 0600) as a copy-on-write clone
 * of the open file `source` (Linux's FICLONE, which Btrfs and XFS answer; ext4 and tmpfs refuse
 * it with EOPNOTSUPP, and two file systems with EXDEV): the new file shares the source's blocks
 * until either is written. 0 on success; -1 with errno, and nothing created, otherwise. */
#ifdef __linux__
#include <sys/ioctl.h>
#ifndef FICLONE
#define FICLONE _IOW(0x94, 9, int)
#endif
static inline int buckia_clone_file(int source, int dirfd, const char *name) {
    int fd = openat(dirfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
    if (fd < 0) return -1;
    if (ioctl(fd, FICLONE, source) != 0) {
        int saved = errno;
        (void)close(fd);
        (void)unlinkat(dirfd, name, 0);
        errno = saved;
        return -1;
    }
    return close(fd);
}
#else
static inline int buckia_clone_file(int source, int dirfd, const char *name) {
    (void)source; (void)dirfd; (void)name;
    errno = EOPNOTSUPP;
    return -1;
}
#endif

/* posix_spawn's glibc extensions (2.29 and 2.34), which the headers declare only for
 * _GNU_SOURCE: the child closes every descriptor from `low` up, and starts in `folder`.
 * Elsewhere they fail with ENOSYS. */
#include <spawn.h>
#ifdef __linux__
extern int posix_spawn_file_actions_addclosefrom_np(posix_spawn_file_actions_t *, int);
extern int posix_spawn_file_actions_addchdir_np(posix_spawn_file_actions_t *, const char *);
static inline int buckia_spawn_close_from(posix_spawn_file_actions_t *actions, int low) { return posix_spawn_file_actions_addclosefrom_np(actions, low); }
static inline int buckia_spawn_chdir(posix_spawn_file_actions_t *actions, const char *folder) { return posix_spawn_file_actions_addchdir_np(actions, folder); }
#else
static inline int buckia_spawn_close_from(posix_spawn_file_actions_t *actions, int low) { (void)actions; (void)low; return ENOSYS; }
static inline int buckia_spawn_chdir(posix_spawn_file_actions_t *actions, const char *folder) { (void)actions; (void)folder; return ENOSYS; }
#endif

/* A pipe whose two ends close on exec (pipe2, declared only for _GNU_SOURCE): no program
 * another thread starts meanwhile inherits them. Elsewhere a pipe, then FD_CLOEXEC on each. */
#ifdef __linux__
extern int pipe2(int fds[2], int flags);
static inline int buckia_pipe_cloexec(int fds[2]) { return pipe2(fds, O_CLOEXEC); }
#else
static inline int buckia_pipe_cloexec(int fds[2]) {
    if (pipe(fds) != 0) return -1;
    (void)fcntl(fds[0], F_SETFD, FD_CLOEXEC);
    (void)fcntl(fds[1], F_SETFD, FD_CLOEXEC);
    return 0;
}
#endif

/* libFuzzer's entry for a program that has its own main (`buckia-fuzz`, built with
 * -sanitize=fuzzer): declared here, linked only into that build. */
#include <stdint.h>
#include <stddef.h>
int LLVMFuzzerRunDriver(int *argc, char ***argv, int (*callback)(const uint8_t *data, size_t size));

#endif
