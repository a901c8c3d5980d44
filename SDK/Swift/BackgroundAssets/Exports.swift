// Apple's BackgroundAssets brings Foundation along; on Linux URLRequest and URLAuthenticationChallenge live in
// FoundationNetworking, so it comes too, and extension code ports without new imports.
@_exported import Foundation
#if canImport(FoundationNetworking)
@_exported import FoundationNetworking
#endif
