import ArgumentParser
import BackgroundAssets
import Foundation
import SystemPackage

/// The managed example app: code as an app on Apple's platforms would write it against `AssetPackManager`. Each
/// option is one call; the app prints what it got as one JSON object per line, in the order of the options below.
/// Run it through `bahost launch APP -- packs-app …`.
@main
struct PacksApp: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "packs-app",
        abstract: "The managed example app: lists, reads, downloads, updates and removes asset packs.")

    @Flag(help: "Print every pack the server offers.") var list = false
    @Option(help: "Print a pack's status relative to the server.") var status: [String] = []
    @Option(help: "Print the text of a file in the packs' namespace: PATH, or PACK-ID:PATH for one pack.")
    var read: [String] = []
    @Option(help: "Make a pack available (downloading it), printing its status updates.") var ensure: [String] = []
    @Option(help: "Start making a pack available, and cancel its download at its first progress update.")
    var cancel: [String] = []
    @Option(help: "Print the names in a folder of the namespace (url(for:), which merges a folder several packs hold).")
    var listFolder: [String] = []
    @Flag(help: "Check for updates and print the updating and removed IDs.") var checkForUpdates = false
    @Option(help: "Remove a pack.") var remove: [String] = []
    @Flag(help: "Print the languages: the manifest's primary and resolved ones, and those on the device (27).")
    var languages = false
    @Option(help: "Set resolvedLanguage (a BCP-47 tag, or 'none' for the user's languages) before acting.")
    var setLanguage: String?
    @Flag(help: "Reconcile the localized packs with the resolved language (after setting it, before reading).")
    var reconcile = false
    @Option(help: "Print the text of a file in the packs localized for a language: LANGUAGE:PATH.")
    var readLocalized: [String] = []

    func run() async throws {
        let manager = AssetPackManager.shared
        if let setLanguage {
            manager.resolvedLanguage = setLanguage == "none" ? nil : Locale.Language(identifier: setLanguage)
        }
        if reconcile {
            do {
                try await manager.reconcilePreferredLanguages()
                say(["reconciled": true])
            } catch {
                say(["reconciled": false, "error": Self.describe(error)])
            }
        }
        if list {
            let packs = try await manager.manifest.assetPacks.sorted { $0.id < $1.id }
            say(["packs": packs.map {
                ["id": $0.id, "version": $0.version, "downloadSize": $0.downloadSize,
                 "language": $0.language?.minimalIdentifier ?? ""] as [String: Any]
            }])
        }
        if languages {
            let manifest = try await manager.manifest
            say([
                "primaryLanguage": manifest.primaryLanguage?.minimalIdentifier ?? "",
                "resolvedLanguage": manifest.resolvedLanguage?.minimalIdentifier ?? "",
                "resolvedLanguageID": manager.resolvedLanguage?.minimalIdentifier ?? "",
                // Apple's arrays, in their documented order (by tag): printed as they come.
                "availableLanguages": manifest.availableLanguages.map(\.minimalIdentifier),
                "locallyAvailableLanguages": await manager.locallyAvailableLanguages.map(\.minimalIdentifier),
            ])
        }
        for spec in readLocalized {
            let parts = spec.split(separator: ":", maxSplits: 1).map(String.init)
            guard parts.count == 2 else { throw ValidationError("--read-localized takes LANGUAGE:PATH") }
            do {
                let data = try manager.contents(at: FilePath(parts[1]), asLocalizedFor: Locale.Language(identifier: parts[0]))
                say(["readLocalized": spec, "text": String(decoding: data, as: UTF8.self)])
            } catch {
                say(["readLocalized": spec, "error": Self.describe(error)])
            }
        }
        for id in status {
            let pack = try await manager.assetPack(withID: id)
            let status = try await manager.status(relativeTo: pack)
            say(["status": id, "raw": status.rawValue, "description": status.description])
        }
        for id in ensure {
            do {
                let pack = try await manager.assetPack(withID: id)
                let watcher = Self.watch(id, cancellingAtFirstProgress: false)
                try await Task.sleep(for: .milliseconds(200))
                try await manager.ensureLocalAvailability(of: pack)
                let updates = await Self.collect(watcher, timeout: .seconds(10))
                say(["ensured": id, "available": manager.assetPackIsAvailableLocally(withID: id), "updates": updates])
            } catch {
                say(["ensured": id, "error": Self.describe(error)])
            }
        }
        for id in cancel {
            let pack = try await manager.assetPack(withID: id)
            let watcher = Self.watch(id, cancellingAtFirstProgress: true)
            try await Task.sleep(for: .milliseconds(200))
            var result: [String: Any] = ["cancelled": id]
            do {
                try await manager.ensureLocalAvailability(of: pack)
                result["error"] = "none"
            } catch {
                result["error"] = Self.describe(error)
            }
            result["updates"] = await Self.collect(watcher, timeout: .seconds(10))
            result["available"] = manager.assetPackIsAvailableLocally(withID: id)
            say(result)
        }
        for spec in read {
            let (pack, path) = spec.contains(":")
                ? (String(spec.split(separator: ":", maxSplits: 1)[0]), String(spec.split(separator: ":", maxSplits: 1)[1]))
                : (nil, spec)
            do {
                let data = try manager.contents(at: FilePath(path), searchingInAssetPackWithID: pack)
                say(["read": spec, "text": String(decoding: data, as: UTF8.self)])
            } catch {
                say(["read": spec, "error": Self.describe(error)])
            }
        }
        for path in listFolder {
            let url = try manager.url(for: FilePath(path))
            let names = (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? []
            say(["folder": path, "names": names.sorted()])
        }
        if checkForUpdates {
            let (updating, removed) = try await manager.checkForUpdates()
            say(["updating": updating.sorted(), "removed": removed.sorted()])
        }
        for id in remove {
            do {
                try await manager.remove(assetPackWithID: id)
                say(["removed": id, "available": manager.assetPackIsAvailableLocally(withID: id)])
            } catch {
                say(["removed": id, "error": Self.describe(error)])
            }
        }
    }

    /// Collects the names of a pack's status updates until its sequence finishes (repeated progress counts once);
    /// `cancellingAtFirstProgress` cancels the download through the first update's `Progress`.
    static func watch(_ id: String, cancellingAtFirstProgress: Bool) -> Task<[String], Never> {
        Task {
            var seen: [String] = []
            for await update in AssetPackManager.shared.statusUpdates(forAssetPackWithID: id) {
                switch update {
                case .began: seen.append("began")
                case .paused: seen.append("paused")
                case .downloading(_, let progress):
                    guard seen.last != "downloading" else { continue }
                    seen.append("downloading")
                    if cancellingAtFirstProgress { progress.cancel() }
                case .finished: seen.append("finished")
                case .failed: seen.append("failed")
                }
            }
            return seen
        }
    }

    /// The updates a watcher saw, once its sequence finished or `timeout` passed.
    static func collect(_ watcher: Task<[String], Never>, timeout: Duration) async -> [String] {
        await withTaskGroup(of: [String]?.self) { group in
            group.addTask { await watcher.value }
            group.addTask {
                try? await Task.sleep(for: timeout)
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            watcher.cancel()
            return first ?? ["timed out"]
        }
    }

    /// Apple's managed errors by case; others by domain and code.
    static func describe(_ error: any Error) -> String {
        switch error {
        case ManagedBackgroundAssetsError.assetPackNotFound(let id): "assetPackNotFound(\(id))"
        case ManagedBackgroundAssetsError.fileNotFound(let path): "fileNotFound(\(path))"
        default: "\((error as NSError).domain) \((error as NSError).code)"
        }
    }

    func say(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys]) else { return }
        print(String(decoding: data, as: UTF8.self))
    }
}
