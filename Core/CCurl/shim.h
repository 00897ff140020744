#ifndef BUCKIA_CCURL_SHIM_H
#define BUCKIA_CCURL_SHIM_H
/*
 * libcurl for Swift. curl_easy_setopt, curl_easy_getinfo and curl_multi_setopt are variadic,
 * which Swift cannot call; these wrappers fix each argument type. Nothing else is added.
 */
#include <curl/curl.h>

typedef size_t (*buckia_curl_data_callback)(char *buffer, size_t size, size_t count, void *context);
typedef int (*buckia_curl_seek_callback)(void *context, curl_off_t offset, int origin);
typedef int (*buckia_curl_progress_callback)(void *context, curl_off_t download_total, curl_off_t downloaded,
                                             curl_off_t upload_total, curl_off_t uploaded);

static inline CURLcode buckia_curl_set_long(CURL *handle, CURLoption option, long value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode buckia_curl_set_offset(CURL *handle, CURLoption option, curl_off_t value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode buckia_curl_set_string(CURL *handle, CURLoption option, const char *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode buckia_curl_set_pointer(CURL *handle, CURLoption option, void *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode buckia_curl_set_list(CURL *handle, CURLoption option, struct curl_slist *value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode buckia_curl_set_data_callback(CURL *handle, CURLoption option, buckia_curl_data_callback value) {
    return curl_easy_setopt(handle, option, value);
}
static inline CURLcode buckia_curl_set_seek_callback(CURL *handle, buckia_curl_seek_callback value) {
    return curl_easy_setopt(handle, CURLOPT_SEEKFUNCTION, value);
}
static inline CURLcode buckia_curl_set_progress_callback(CURL *handle, buckia_curl_progress_callback value) {
    return curl_easy_setopt(handle, CURLOPT_XFERINFOFUNCTION, value);
}
static inline CURLcode buckia_curl_get_long(CURL *handle, CURLINFO info, long *value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLcode buckia_curl_get_pointer(CURL *handle, CURLINFO info, void **value) {
    return curl_easy_getinfo(handle, info, value);
}
static inline CURLMcode buckia_curl_multi_set_long(CURLM *multi, CURLMoption option, long value) {
    return curl_multi_setopt(multi, option, value);
}
/* The pieces of a CURLMsg, which holds a union Swift reads awkwardly. */
static inline int buckia_curl_message_done(CURLMsg *message, CURL **handle, CURLcode *result) {
    if (message->msg != CURLMSG_DONE) return 0;
    *handle = message->easy_handle;
    *result = message->data.result;
    return 1;
}
/* What a write callback returns to pause the transfer: libcurl keeps the bytes it offered and
 * offers them again once the transfer is resumed. */
static inline size_t buckia_curl_write_pause(void) { return CURL_WRITEFUNC_PAUSE; }
/* Resumes a paused transfer (on the thread that drives it). */
static inline CURLcode buckia_curl_resume(CURL *handle) { return curl_easy_pause(handle, CURLPAUSE_CONT); }
#endif
