import Foundation
import Testing
import TestSupport

/// A server's challenge reaches the extension when no app delegate answers it: a real daemon, nginx's `auth_basic`,
/// and the extension in a window of its own (`did_receive_challenge`), with no app running.
@Suite(.ownThreads) struct ExtensionChallengeTests {
    let nginx = Nginx.shared

    /// An app whose extension (`probes/answers_challenges`) returns one download behind Basic auth, and answers
    /// with `credential` from the group's container.
    func install(credential: String?) throws -> (ServiceDaemon, TestApp, Data) {
        let dir = "auth-\(UUID().uuidString.prefix(8))"
        let secret = Data.random(count: 80_000)
        try nginx.serve(secret, at: "private/\(dir)/secret.pack")
        try nginx.serve(Data("secret \(nginx.https("private/\(dir)/secret.pack")) 80000\n".utf8), at: "\(dir)/manifest.txt")
        let app = try TestApp(
            manifestURL: nginx.https("\(dir)/manifest.txt"), plugin: try TestPlugins.c("probes/answers_challenges"))
        let daemon = try ServiceDaemon()
        if let credential {
            let container = app.container(in: daemon.dataRoot)
            try FileManager.default.createDirectory(at: container, withIntermediateDirectories: true)
            try Data(credential.utf8).write(to: container.appendingPathComponent("credential"))
        }
        #expect(try daemon.report(["install", app.folder.path]).status == 0)
        return (daemon, app, secret)
    }

    @Test func theExtensionAnswersAndTheDownloadFinishes() throws {
        let (daemon, app, secret) = try install(credential: "\(Nginx.user):\(Nginx.password)")
        #expect(try ServiceDaemon.waitUntil {
            try daemon.downloads(app.identifier)["secret"]?["delivered"] as? Bool == true
        }, "\(daemon.logText)")
        let log = daemon.logText
        #expect(log.contains("purpose=authentication challenge for secret seconds="), "\(log)")
        #expect(log.contains("challenge secret host=localhost port=\(nginx.httpsPort) protocol=https realm=levels"))
        #expect(log.contains("kept secret"))
        #expect(try Data(contentsOf: app.container(in: daemon.dataRoot).appendingPathComponent("secret")) == secret)
    }

    /// A credential the server refuses is asked about again with `previousFailureCount`; the extension then cancels,
    /// and the download fails with the server's 401, which the extension hears.
    @Test func aRefusedCredentialIsAskedAgainThenTheDownloadFails() throws {
        let (daemon, app, _) = try install(credential: "\(Nginx.user):not-the-password")
        #expect(try ServiceDaemon.waitUntil {
            try daemon.downloads(app.identifier)["secret"]?["delivered"] as? Bool == true
        }, "\(daemon.logText)")
        let log = daemon.logText
        #expect(log.contains("realm=levels method=NSURLAuthenticationMethodHTTPBasic previous=0"), "\(log)")
        #expect(log.contains("realm=levels method=NSURLAuthenticationMethodHTTPBasic previous=1"))
        #expect(log.contains("failed secret: ") && log.contains("401"), "\(log)")
    }
}
