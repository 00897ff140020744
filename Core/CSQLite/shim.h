#ifndef BUCKIA_CSQLITE_SHIM_H
#define BUCKIA_CSQLITE_SHIM_H
#include <sqlite3.h>
#endif
