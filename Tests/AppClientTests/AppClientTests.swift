import AppClient
import Foundation
import ServiceWire
import Synchronization
import Testing
import Vocabulary

/// The app's side of the service's protocol on its own, against a service the test plays on a real Unix socket:
/// what it sends, and what it makes of each answer (a refusal before anything was read, the service going away, a
/// connection made again). The daemon's tests cover the service's side with real apps.
@Suite struct AppClientTests {
    /// A Unix socket the test accepts on, one connection at a time, each on a thread of its own.
    final class ScriptedService: Sendable {
        let path = NSTemporaryDirectory() + "bahost-appclient-\(UUID().uuidString.prefix(8)).sock"
        private let listener: Int32
        /// The requests of each connection, in order.
        let received = Mutex<[[ServiceRequest]]>([])

        init() throws {
            listener = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_un()
            address.sun_family = sa_family_t(AF_UNIX)
            withUnsafeMutableBytes(of: &address.sun_path) { raw in
                for (index, byte) in path.utf8.enumerated() { raw[index] = byte }
            }
            let bound = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    bind(listener, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
                }
            }
            try #require(bound == 0 && listen(listener, 4) == 0)
        }

        deinit {
            close(listener)
            unlink(path)
        }

        /// Accepts the next connection and answers each request with `answer`; nil closes the connection unanswered.
        func serve(_ answer: @escaping @Sendable (ServiceRequest) -> ServiceReply?) {
            Thread.detachNewThread { [self] in
                let socket = FramedSocket(descriptor: accept(listener, nil, nil))
                let index = received.withLock { $0.append([]); return $0.count - 1 }
                while let frame = try? socket.receive(),
                    case .request(let id, let request)? = try? ServiceProtocol.decodeClientMessage(frame)
                {
                    received.withLock { $0[index].append(request) }
                    guard let reply = answer(request), let sent = try? ServiceProtocol.encode(.reply(id: id, reply))
                    else { break }
                    try? socket.send(sent)
                }
                socket.close()
            }
        }

        /// Accepts the next connection and refuses it before reading anything, as the service turns a peer away (a
        /// reply to id 0), then closes it.
        func refuseNext(_ error: HostError) {
            Thread.detachNewThread { [self] in
                let socket = FramedSocket(descriptor: accept(listener, nil, nil))
                if let frame = try? ServiceProtocol.encode(.reply(id: 0, .failure(error))) { try? socket.send(frame) }
                socket.close()
            }
        }

        /// The service's answers: its hello, then `ok`.
        static func answer(_ request: ServiceRequest) -> ServiceReply? {
            if case .hello = request { return .hello(HelloReply(serviceVersion: "test")) }
            return .ok
        }
    }

    /// A request in a few words, for comparing sequences.
    func name(_ request: ServiceRequest) -> String {
        switch request {
        case .hello(let hello): "hello \(hello.role.rawValue) \(hello.appIdentifier ?? "-")"
        case .setPlaying(let playing): "setPlaying \(playing)"
        case .setDelegate(let set): "setDelegate \(set)"
        default: "other"
        }
    }

    /// No service at the socket: Apple's 56, naming the socket; no identity: Apple's 55, naming how to get one.
    @Test func anAppWithoutAServiceOrAnIdentityIsToldWhy() throws {
        let absent = AppClient(socketPath: "/nonexistent/bahost.sock", appIdentifier: "com.example.levels")
        #expect(throws: HostError.self) { try absent.connect() }
        do {
            try absent.connect()
        } catch {
            #expect(error.code == 56 && error.message.contains("/nonexistent/bahost.sock"), "\(error)")
        }
        let environment = ProcessInfo.processInfo.environment
        guard environment["BAHOST_APP_IDENTIFIER"] == nil && environment["FLATPAK_ID"] == nil else { return }
        let anonymous = AppClient(socketPath: "/nonexistent/bahost.sock", appIdentifier: nil)
        do {
            try anonymous.connect()
            Issue.record("a process without an identity connected")
        } catch {
            #expect(error.code == 55 && error.message.contains("BAHOST_APP_IDENTIFIER"), "\(error)")
        }
    }

    /// The service may turn a peer away before it reads anything (another user, the wrong Flatpak): the app hears
    /// the service's reason, not a broken pipe.
    @Test func aRefusalBeforeTheHelloIsReportedAsTheServiceSaidIt() throws {
        let service = try ScriptedService()
        let client = AppClient(socketPath: service.path, appIdentifier: "com.example.other")
        service.refuseNext(HostError(code: 55, domain: "BAErrorDomain", message: "a Flatpak acts only as itself"))
        do {
            try client.connect()
            Issue.record("a refused connection was accepted")
        } catch {
            #expect(error.code == 55 && error.message.contains("acts only as itself"), "\(error)")
        }
    }

    /// The hello comes first and names the app; when the service goes away a call waiting for its reply fails with
    /// 56, and the next call connects again, saying again that a game of the app's plays before its own request.
    @Test func aConnectionIsIntroducedAndMadeAgainAfterTheServiceLeft() throws {
        let service = try ScriptedService()
        let client = AppClient(socketPath: service.path, appIdentifier: "com.example.levels")
        defer { client.disconnect() }
        service.serve { request in
            if case .setPlaying(false) = request { return nil }
            return ScriptedService.answer(request)
        }
        try client.setPlaying(true)
        do {
            _ = try client.request(.setPlaying(false))
            Issue.record("a connection the service closed answered")
        } catch {
            #expect(error.code == 56, "\(error)")
        }
        service.serve(ScriptedService.answer)
        try client.expectOK(.setDelegate(false))
        let requests = service.received.withLock { $0 }.map { $0.map(name) }
        #expect(requests == [
            ["hello app com.example.levels", "setPlaying true", "setPlaying false"],
            ["hello app com.example.levels", "setPlaying true", "setDelegate false"],
        ])
    }
}
