#ifndef BUCKIA_CSQLITE_SHIM_H
#define BUCKIA_CSQLITE_SHIM_H
#include <sqlite3.h>

/* sqlite3_db_config is variadic, which Swift cannot call: one fixed-argument wrapper for the
 * integer options (SQLITE_DBCONFIG_DEFENSIVE, _TRUSTED_SCHEMA, _ENABLE_TRIGGER, ...). Returns
 * the SQLite result code; the option's value after the call goes to *now when it is not NULL. */
static inline int buckia_sqlite3_db_config_int(sqlite3 *db, int option, int value, int *now) {
    return sqlite3_db_config(db, option, value, now);
}

/* SQLite's session extension, found when the process runs (dlsym), so Buckia links against an
 * SQLite built without it (Apple's) and uses it where it is there (Debian's, Homebrew's). */
#include <dlfcn.h>
#include <stddef.h>
typedef struct buckia_session_api {
    int (*create)(sqlite3 *, const char *, void **);
    int (*attach)(void *, const char *);
    int (*changeset)(void *, int *, void **);
    void (*delete_session)(void *);
    int (*start)(void **, int, void *);
    int (*next)(void *);
    int (*op)(void *, const char **, int *, int *, int *);
    int (*pk)(void *, unsigned char **, int *);
    int (*old_value)(void *, int, sqlite3_value **);
    int (*new_value)(void *, int, sqlite3_value **);
    int (*finalize)(void *);
} buckia_session_api;

/* dladdr, which glibc declares only with _GNU_SOURCE; the layout is glibc's Dl_info. */
#if defined(__linux__) && !defined(_GNU_SOURCE)
typedef struct { const char *dli_fname; void *dli_fbase; const char *dli_sname; void *dli_saddr; } buckia_dl_info;
extern int dladdr(const void *address, buckia_dl_info *info);
#else
typedef Dl_info buckia_dl_info;
#endif

/* Fills `api` from the library that holds the sqlite3_open_v2 Buckia calls (never another
 * SQLite loaded beside it, whose session functions would not own Buckia's handles); 1 when
 * every function was found, 0 otherwise. */
static inline int buckia_load_session_api(buckia_session_api *api) {
    buckia_dl_info info;
    if (!dladdr((const void *)sqlite3_open_v2, &info) || !info.dli_fname) return 0;
    void *self = dlopen(info.dli_fname, RTLD_NOW | RTLD_NOLOAD);
    if (!self) return 0;
    api->create = (int (*)(sqlite3 *, const char *, void **))dlsym(self, "sqlite3session_create");
    api->attach = (int (*)(void *, const char *))dlsym(self, "sqlite3session_attach");
    api->changeset = (int (*)(void *, int *, void **))dlsym(self, "sqlite3session_changeset");
    api->delete_session = (void (*)(void *))dlsym(self, "sqlite3session_delete");
    api->start = (int (*)(void **, int, void *))dlsym(self, "sqlite3changeset_start");
    api->next = (int (*)(void *))dlsym(self, "sqlite3changeset_next");
    api->op = (int (*)(void *, const char **, int *, int *, int *))dlsym(self, "sqlite3changeset_op");
    api->pk = (int (*)(void *, unsigned char **, int *))dlsym(self, "sqlite3changeset_pk");
    api->old_value = (int (*)(void *, int, sqlite3_value **))dlsym(self, "sqlite3changeset_old");
    api->new_value = (int (*)(void *, int, sqlite3_value **))dlsym(self, "sqlite3changeset_new");
    api->finalize = (int (*)(void *))dlsym(self, "sqlite3changeset_finalize");
    return api->create && api->attach && api->changeset && api->delete_session && api->start && api->next && api->op && api->pk
        && api->old_value && api->new_value && api->finalize;
}
static inline int buckia_session_create(buckia_session_api api, sqlite3 *db, const char *name, void **out) { return api.create(db, name, out); }
static inline int buckia_session_attach(buckia_session_api api, void *session, const char *table) { return api.attach(session, table); }
static inline int buckia_session_changeset(buckia_session_api api, void *session, int *size, void **buffer) { return api.changeset(session, size, buffer); }
static inline void buckia_session_delete(buckia_session_api api, void *session) { api.delete_session(session); }
static inline int buckia_changeset_start(buckia_session_api api, void **iterator, int size, void *buffer) { return api.start(iterator, size, buffer); }
static inline int buckia_changeset_next(buckia_session_api api, void *iterator) { return api.next(iterator); }
static inline int buckia_changeset_op(buckia_session_api api, void *iterator, const char **table, int *columns, int *operation, int *indirect) { return api.op(iterator, table, columns, operation, indirect); }
static inline int buckia_changeset_pk(buckia_session_api api, void *iterator, unsigned char **flags, int *columns) { return api.pk(iterator, flags, columns); }
static inline int buckia_changeset_value(buckia_session_api api, void *iterator, int column, int isNew, sqlite3_value **value) {
    return isNew ? api.new_value(iterator, column, value) : api.old_value(iterator, column, value);
}
static inline int buckia_changeset_finalize(buckia_session_api api, void *iterator) { return api.finalize(iterator); }
#endif
