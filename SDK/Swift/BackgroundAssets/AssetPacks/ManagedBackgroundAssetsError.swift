import Foundation
import SystemPackage
import Vocabulary

/// The errors of managed asset packs (Apple's `ManagedBackgroundAssetsError`).
public enum ManagedBackgroundAssetsError: Error, Sendable, Hashable, CustomNSError, LocalizedError {
    /// No asset pack with this ID is offered to the app.
    case assetPackNotFound(withID: String)
    /// No file at this path in the asset packs' namespace.
    case fileNotFound(at: FilePath)

    public static var errorDomain: String { ManagedErrorCode.domain }

    public var errorCode: Int {
        switch self {
        case .assetPackNotFound: BAManagedErrorCode.assetPackNotFound.rawValue
        case .fileNotFound: BAManagedErrorCode.fileNotFound.rawValue
        }
    }

    public var errorUserInfo: [String: Any] {
        switch self {
        case .assetPackNotFound(let id): [BAAssetPackIdentifierErrorKey: id, NSLocalizedDescriptionKey: errorDescription ?? ""]
        case .fileNotFound: [NSLocalizedDescriptionKey: errorDescription ?? ""]
        }
    }

    public var errorDescription: String? {
        switch self {
        case .assetPackNotFound(let id): "no asset pack '\(id)' is offered to this app"
        case .fileNotFound(let path): "no file at '\(path)' in the asset packs"
        }
    }
}

/// Apple's `BAManagedErrorCode`, in `BAManagedErrorDomain`.
public enum BAManagedErrorCode: Int, Sendable {
    /// No asset pack with the requested ID exists.
    case assetPackNotFound = 0
    /// No file exists at the requested path.
    case fileNotFound = 1
    /// Some asset packs could not be made available locally; the error's user info holds the successes and failures.
    case localAvailabilityFailure = 2
}

/// The userInfo key of the pack's ID in an `assetPackNotFound` error.
public let BAAssetPackIdentifierErrorKey = "BAAssetPackIdentifierErrorKey"
/// The userInfo key of the packs made available, in a `localAvailabilityFailure` error.
public let BASuccessesErrorKey = "BASuccessesErrorKey"
/// The userInfo key of the packs that were not, with their errors, in a `localAvailabilityFailure` error.
public let BAFailuresErrorKey = "BAFailuresErrorKey"

extension AssetPackManager {
    /// Some of a set of packs could not be made available (Apple's `LocalAvailabilityError`).
    public struct LocalAvailabilityError: Error, CustomNSError, @unchecked Sendable {  // safe: immutable once made
        /// The packs that are available locally.
        public let successes: Set<AssetPack>
        /// The packs that are not, with why.
        public let failures: [AssetPack: any Error]

        public static var errorDomain: String { ManagedErrorCode.domain }
        public var errorCode: Int { BAManagedErrorCode.localAvailabilityFailure.rawValue }
        public var errorUserInfo: [String: Any] {
            [
                BASuccessesErrorKey: successes, BAFailuresErrorKey: failures,
                NSLocalizedDescriptionKey: "\(failures.count) of \(successes.count + failures.count) asset packs are not available",
            ]
        }
    }
}
