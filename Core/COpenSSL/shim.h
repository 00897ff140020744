#ifndef BUCKIA_COPENSSL_SHIM_H
#define BUCKIA_COPENSSL_SHIM_H
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/crypto.h>
#endif
