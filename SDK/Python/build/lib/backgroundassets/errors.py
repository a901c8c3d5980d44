"""Errors with Apple's domain and code."""

import enum

BAErrorDomain = "BAErrorDomain"
BAManagedErrorDomain = "BAManagedErrorDomain"


class BAErrorCode(enum.IntEnum):
    """Apple's BAErrorCode."""
    DOWNLOAD_INVALID = 0
    CALL_FROM_EXTENSION_NOT_ALLOWED = 50
    CALL_FROM_INACTIVE_PROCESS_NOT_ALLOWED = 51
    CALLER_CONNECTION_NOT_ACCEPTED = 55
    CALLER_CONNECTION_INVALID = 56
    DOWNLOAD_ALREADY_SCHEDULED = 100
    DOWNLOAD_NOT_SCHEDULED = 101
    DOWNLOAD_FAILED_TO_START = 102
    DOWNLOAD_ALREADY_FAILED = 103
    DOWNLOAD_ESSENTIAL_DOWNLOAD_NOT_PERMITTED = 109
    DOWNLOAD_BACKGROUND_ACTIVITY_PROHIBITED = 111
    DOWNLOAD_WOULD_EXCEED_ALLOWANCE = 112
    DOWNLOAD_DOES_NOT_EXIST = 113
    SESSION_DOWNLOAD_DISALLOWED_BY_DOMAIN = 202
    SESSION_DOWNLOAD_DISALLOWED_BY_ALLOWANCE = 203
    SESSION_DOWNLOAD_ALLOWANCE_EXCEEDED = 204
    SESSION_DOWNLOAD_NOT_PERMITTED_BEFORE_APP_LAUNCH = 206


class BAManagedErrorCode(enum.IntEnum):
    """Apple's BAManagedErrorCode."""
    ASSET_PACK_NOT_FOUND = 0
    FILE_NOT_FOUND = 1


class BAError(Exception):
    """An error of Background Assets, or of the layers below it (NSURLErrorDomain for transport failures,
    NSPOSIXErrorDomain for the exclusive-control lock, BAHostErrorDomain for bahost's own): `domain`, `code`,
    `message`."""

    def __init__(self, domain, code, message):
        super().__init__(f"{domain} {code}: {message}")
        self.domain, self.code, self.message = domain, code, message

    @classmethod
    def _from(cls, error):
        domain = error.domain.decode("utf-8", "replace")
        kind = ManagedBackgroundAssetsError if domain == BAManagedErrorDomain else cls
        return kind(domain, error.code, error.message.decode("utf-8", "replace"))


class ManagedBackgroundAssetsError(BAError):
    """Apple's ManagedBackgroundAssetsError: an asset pack or a file that is not there."""
