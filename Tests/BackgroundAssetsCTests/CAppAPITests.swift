import Foundation
import ServiceWire
import Testing
import TestSupport

/// The app's C API (ba/app.h) held to Apple's codes and clear messages when an app misuses it
/// (`Plugins/C/apps/app_api_misuse.c`, run as the launched app against a real daemon), and its two ways of taking
/// callbacks. The behaviours Apple's API promises are tested through the C library by every `levels-app` test,
/// which runs the C twin too.
@Suite(.ownThreads) struct CAppAPITests {
    /// Each case the probe printed, by name.
    func cases() throws -> (ExampleAppService, [String: [String: Any]]) {
        let service = try ExampleAppService()
        let probe = try TestPlugins.cApp("apps/app_api_misuse")
        let result = try service.daemon.launch(service.app.identifier, probe, [])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let lines = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        return (service, Dictionary(lines.map { ($0["case"] as? String ?? "", $0) }, uniquingKeysWith: { $1 }))
    }

    func failure(_ answer: [String: Any]?) -> (domain: String, code: Int, message: String)? {
        guard let answer, answer["ok"] as? Bool == false else { return nil }
        return (answer["domain"] as? String ?? "", answer["code"] as? Int ?? -1, answer["message"] as? String ?? "")
    }

    @Test func misuseGetsApplesCodesAndSaysWhatWasWrong() throws {
        let (service, answers) = try cases()
        func expectFailure(
            _ name: String, _ domain: String, _ code: Int, _ words: String, sourceLocation: SourceLocation = #_sourceLocation
        ) {
            let got = failure(answers[name])
            #expect(got?.domain == domain, "\(name): \(String(describing: answers[name]))", sourceLocation: sourceLocation)
            #expect(got?.code == code, "\(name): \(String(describing: answers[name]))", sourceLocation: sourceLocation)
            #expect(got?.message.contains(words) == true, "\(name): \(got?.message ?? "none")", sourceLocation: sourceLocation)
        }
        let host = "BAHostErrorDomain", apple = "BAErrorDomain"
        expectFailure("options-struct-size", host, Int(EINVAL), "ba_app_options_t.struct_size is 4; this library needs 24")
        expectFailure("unknown-callback-mode", host, Int(EINVAL), "callback_mode 7 is unknown")
        #expect(answers["connect"]?["ok"] as? Bool == true, "\(String(describing: answers["connect"]))")
        expectFailure("second-connect", apple, 56, "already connected")
        #expect(answers["fd-in-library-thread-mode"]?["value"] as? Int == -1)
        #expect(answers["dispatch-in-library-thread-mode"]?["value"] as? Int == -1)
        expectFailure("download-struct-size", apple, 0, "ba_download_t.struct_size is 8; this library needs 88")
        expectFailure("null-download", apple, 0, "the download is NULL")
        expectFailure("download-without-url", apple, 0, "the download has no URL")
        expectFailure("another-apps-group", apple, 55, "group.com.example.other")
        expectFailure("cancel-unscheduled", apple, 101, "never-scheduled")
        expectFailure("delegate-struct-size", host, Int(EINVAL), "ba_app_delegate_t.struct_size is 0")
        expectFailure("fetch-without-visitor", host, Int(EINVAL), "visit is NULL")
        expectFailure("copy-without-list", host, Int(EINVAL), "list is NULL")
        expectFailure("exclusive-control-without-handler", host, Int(EINVAL), "handler is NULL")

        let container = service.app.container(in: service.daemon.dataRoot).path
        expectFailure("container-small-buffer", host, Int(ERANGE), "needs \(container.utf8.count + 1) bytes")
        #expect(answers["container-length"]?["value"] as? Int == container.utf8.count + 1)
        #expect(answers["container"]?["ok"] as? Bool == true)
        expectFailure("container-other-group", host, Int(ENOENT), "not this app's")

        // An error struct of 24 bytes: the code and a cut, terminated domain, nothing written past it.
        #expect(answers["short-error-written"]?["value"] as? Int == 24)
        #expect(answers["short-error-code"]?["value"] as? Int == 0)
        #expect(answers["short-error-canary-intact"]?["value"] as? Int == 1)

        expectFailure("after-disconnect", apple, 56, "not connected")
        expectFailure("fetch-after-disconnect", apple, 56, "not connected")
        expectFailure("playing-after-disconnect", apple, 56, "not connected")
        expectFailure("copy-after-disconnect", apple, 56, "not connected")
        #expect(answers["copy-after-disconnect-list-cleared"]?["value"] as? Int == 1)
        #expect(answers["dispatch-after-disconnect"]?["value"] as? Int == -1)
        #expect(answers["reconnect"]?["ok"] as? Bool == true, "\(String(describing: answers["reconnect"]))")
        #expect(answers["library-major"]?["value"] as? Int == 1)
        #expect(answers["library-minor"]?["value"] as? Int == 2)
    }

    /// A library and a service of different protocol versions (an app built against an older or a newer bahost)
    /// refuse each other at the hello, with Apple's 55 and both versions named, instead of misreading frames.
    @Test func anotherProtocolVersionIsRefusedAtTheHelloNamingBoth() throws {
        let service = try ExampleAppService()
        for version in [ServiceProtocol.version - 1, ServiceProtocol.version + 1] {
            let socket = try FramedSocket.connect(to: service.daemon.socket)
            defer { socket.close() }
            var hello = Hello(role: .app, appIdentifier: service.app.identifier)
            hello.protocolVersion = version
            try socket.send(try ServiceProtocol.encode(ClientMessage.request(id: 1, .hello(hello))))
            let frame = try #require(try socket.receive())
            guard case .reply(1, .failure(let error)) = try ServiceProtocol.decodeServiceMessage(frame) else {
                Issue.record("the service did not refuse protocol \(version)")
                continue
            }
            #expect(error.code == 55)
            #expect(error.message.contains("speaks protocol \(version); this service speaks \(ServiceProtocol.version)"))
        }
    }

    /// A host that unloads the library after using it (LÖVE's LuaJIT dlcloses it when the game quits) goes on
    /// living: the library stays loaded, since the Swift runtime it brings cannot be unloaded under the threads it
    /// started (before, the game crashed at its exit, now and then).
    @Test func aHostThatUnloadsTheLibraryLivesOn() throws {
        let service = try ExampleAppService()
        let program = try TestPlugins.cApp("apps/unloading_app", linked: false)
        let library = TestPlugins.buildFolder.appendingPathComponent("libbackgroundassets.so").path
        let result = try service.daemon.launch(service.app.identifier, program, [library, "6"])
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        let answers = result.stdout.split(separator: "\n").compactMap {
            try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]
        }
        let passed = answers.filter { $0["ok"] as? Bool == true }.compactMap { $0["case"] as? String }
        #expect(passed == ["use", "dlclose", "still-loaded", "lived-on"], "\(result.stdout)\n\(result.stderr)")
    }

    /// A challenge answered after its callback returned, from a thread of the app's own (ba_challenge_reply_t's
    /// rule), in both ways of taking callbacks: the download goes on with the credential.
    @Test(arguments: [LevelsApp.c, LevelsApp.cOnLibraryThread])
    func aChallengeAnsweredLaterFromAnotherThreadIsHeard(levelsApp: LevelsApp) throws {
        let service = try ExampleAppService()
        let secret = Data.random(count: 80_000)
        try Nginx.shared.serve(secret, at: "private/\(service.dir)/later.pack")
        let result = try levelsApp.run(
            ["--schedule", "later=\(Nginx.shared.https("private/\(service.dir)/later.pack"))@80000", "--credential",
             "\(Nginx.user):\(Nginx.password)", "--answer-challenge-later", "--wait-for", "1", "--timeout", "30"],
            app: service.app.identifier, daemon: service.daemon)
        #expect(result.status == 0, "\(result.stdout)\n\(result.stderr)")
        #expect(!result.events("challenge").isEmpty, "\(result.stdout)")
        let finished = try #require(result.events("finished").first, "\(result.stdout)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: finished["path"] as? String ?? "")) == secret)
    }
}
