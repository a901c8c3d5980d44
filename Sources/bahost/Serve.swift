import ArgumentParser
import Foundation
import PackServer

/// `bahost serve`: Apple's `ba-serve`, a local HTTPS server for managed asset packs.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "Serve pack archives and their download manifest over HTTPS, for testing managed asset packs (ba-serve).",
        discussion: """
            The download manifest is at https://HOST:PORT/download-manifest.json and each pack at \
            https://HOST:PORT/ASSET-PACK-ID, with Range support. The certificate must be valid for HOST and trusted \
            by the service (bahost daemon --ca-file). Each request is logged on standard error. Runs until stopped.
            """)
    @Option(help: "The host name or address to listen on and to put in the URLs.") var host: String
    @Option(help: "The port (0: any free port, printed at start).") var port = 8443
    @Option(help: "The server's certificate chain (PEM).") var cert: String
    @Option(help: "The certificate's private key (PEM).") var key: String
    @Flag(help: "Print where it serves as one JSON object.") var json = false
    @Argument(help: "The pack archives (from bahost pack package).") var packs: [String]

    func validate() throws {
        guard !packs.isEmpty else { throw ValidationError("name at least one pack archive") }
        guard (0...65535).contains(port) else { throw ValidationError("--port must be 0 to 65535") }
    }

    func run() async throws {
        let server = try await PackServer.start(
            host: host, port: port, certificate: cert, key: key, archives: packs,
            log: { Output.standardError("\($0)\n") })
        if json {
            let object: [String: Any] = [
                "baseURL": server.baseURL, "manifestURL": server.manifestURL,
                "packs": server.manifest.assetPacks.map(\.id),
            ]
            let data = try JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
            say(String(decoding: data, as: UTF8.self))
        } else {
            say("serving \(server.manifest.assetPacks.count) packs at \(server.baseURL)")
            say("download manifest: \(server.manifestURL)")
        }
        // Stopped by a signal, it still removes the file objects it unpacked.
        var sources: [any DispatchSourceSignal] = []
        for stop in [SIGINT, SIGTERM] {
            signal(stop, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: stop)
            source.setEventHandler { Task { try? await server.close() } }
            source.resume()
            sources.append(source)
        }
        try await server.wait()
        sources.forEach { $0.cancel() }
    }

    /// Written at once, unbuffered: scripts and tests read the URL while the server runs.
    private func say(_ line: String) { Output.standardOutput(line + "\n") }
}
