"""Apple's Background Assets for Linux apps in Python: `BADownloadManager` and its delegate, `AssetPackManager`,
over bahost's C library (ba/app.h). The app runs under `bahost launch APP -- python3 …`, which proves its identity
to the service."""

from .asset_packs import AssetPack, AssetPackManager, Status, StatusUpdate, UpdateKind
from .downloads import BADownload, BAURLDownload, State
from .errors import BAError, BAErrorCode, BAErrorDomain, BAManagedErrorCode, BAManagedErrorDomain, \
    ManagedBackgroundAssetsError
from .manager import BADownloadManager, BADownloadManagerDelegate, Challenge, ChallengeDisposition, disconnect

__all__ = [
    "AssetPack", "AssetPackManager", "BADownload", "BADownloadManager", "BADownloadManagerDelegate", "BAError",
    "BAErrorCode", "BAErrorDomain", "BAManagedErrorCode", "BAManagedErrorDomain", "BAURLDownload", "Challenge",
    "ChallengeDisposition", "ManagedBackgroundAssetsError", "State", "Status", "StatusUpdate", "UpdateKind",
    "disconnect",
]
