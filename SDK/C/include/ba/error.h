/* ba/error.h: errors that cross the ABI, with Apple's BAErrorCode raw values. */
#ifndef BA_ERROR_H
#define BA_ERROR_H

#include <stdint.h>

/* Apple's BAErrorCode, same raw values (BAErrorDomain). */
typedef enum ba_error_code {
    BA_ERROR_DOWNLOAD_INVALID = 0,
    BA_ERROR_CALL_FROM_EXTENSION_NOT_ALLOWED = 50,
    BA_ERROR_CALL_FROM_INACTIVE_PROCESS_NOT_ALLOWED = 51,
    BA_ERROR_CALLER_CONNECTION_NOT_ACCEPTED = 55,
    BA_ERROR_CALLER_CONNECTION_INVALID = 56,
    BA_ERROR_DOWNLOAD_ALREADY_SCHEDULED = 100,
    BA_ERROR_DOWNLOAD_NOT_SCHEDULED = 101,
    BA_ERROR_DOWNLOAD_FAILED_TO_START = 102,
    BA_ERROR_DOWNLOAD_ALREADY_FAILED = 103,
    BA_ERROR_DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED = 109,
    BA_ERROR_DOWNLOAD_BACKGROUND_ACTIVITY_PROHIBITED = 111,
    BA_ERROR_DOWNLOAD_WOULD_EXCEED_ALLOWANCE = 112,
    BA_ERROR_DOWNLOAD_DOES_NOT_EXIST = 113,
    BA_ERROR_SESSION_DOWNLOAD_DISALLOWED_BY_DOMAIN = 202,
    BA_ERROR_SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE = 203,
    BA_ERROR_SESSION_DOWNLOAD_ALLOWANCE_EXCEEDED = 204,
    BA_ERROR_SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH = 206,
} ba_error_code_t;

/* Apple's error domain string. Errors from other layers carry their own domain (for example "NSURLErrorDomain"
 * for transport failures, "bahost" for verification failures). */
#define BA_ERROR_DOMAIN "BAErrorDomain"

/* An error, by value: no pointer inside, so nobody owns anything. Strings are NUL-terminated UTF-8, truncated to
 * fit. As an out-parameter (host functions), the caller sets struct_size to the room it has (0 is read as the 1.0
 * size) and the filler writes no more than that, then sets struct_size to what it wrote. */
typedef struct ba_error {
    uint32_t struct_size;
    int64_t code;
    char domain[64];
    char message[512];
} ba_error_t;

#endif
