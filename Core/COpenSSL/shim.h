#ifndef BUCKIA_COPENSSL_SHIM_H
#define BUCKIA_COPENSSL_SHIM_H
// BuckiaCrypto imports this where CryptoKit does not exist (Linux); buckia-bench too, to time
// libcrypto directly beside it.
//
// SHA256_CTX, SHA_CTX and MD5_CTX with their Init/Update/Final functions are deprecated in
// OpenSSL 3 in favour of EVP_MD_CTX, but they are what gives CryptoKit's hash functions their
// value semantics at no cost: a fixed-size struct that copies by assignment, never allocates
// and never fails. OpenSSL 3 still ships and tests them; this define keeps their deprecation
// attributes from turning every call into a compiler warning.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/md5.h>
#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/crypto.h>
#endif
