#ifndef BUCKIA_CSQLITE_SHIM_H
#define BUCKIA_CSQLITE_SHIM_H
#include <sqlite3.h>

/* sqlite3_db_config is variadic, which Swift cannot call: one fixed-argument wrapper for the
 * integer options (SQLITE_DBCONFIG_DEFENSIVE, _TRUSTED_SCHEMA, _ENABLE_TRIGGER, ...). Returns
 * the SQLite result code; the option's value after the call goes to *now when it is not NULL. */
static inline int buckia_sqlite3_db_config_int(sqlite3 *db, int option, int value, int *now) {
    return sqlite3_db_config(db, option, value, now);
}
#endif
