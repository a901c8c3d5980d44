import ExtensionRuntime
import Foundation
import Testing
import TestSupport
import Vocabulary

/// `did_receive_challenge` in a real window: the question reaches the extension with its protection space, the
/// answer comes back with Apple's dispositions, and the window waits for an answer given after the entry point
/// returned.
@Suite(.ownThreads) struct ChallengeTests {
    let download = Download(
        identifier: "secret", url: "https://localhost/private/secret.pack", applicationGroupIdentifier: "group.com.example.levels",
        fileSize: 100)
    let challenge = AuthenticationChallenge(
        host: "localhost", port: 8443, scheme: "https", realm: "levels",
        authenticationMethod: "NSURLAuthenticationMethodHTTPBasic", previousFailureCount: 0)

    func container(credential: String?) throws -> ExtensionWindow.AppGroup {
        let folder = TestPlugins.scratch.appendingPathComponent("challenge-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        if let credential { try Data(credential.utf8).write(to: folder.appendingPathComponent("credential")) }
        return ExtensionWindow.AppGroup(identifier: "group.com.example.levels", container: folder.path)
    }

    @Test func theExtensionAnswersWithACredentialAfterItsEntryPointReturned() throws {
        let group = try container(credential: "player:level-up")
        let outcome = try ExtensionWindow(pluginPath: try TestPlugins.c("probes/answers_challenges"), appGroup: group)
            .run([.challenge(download, challenge)])
        #expect(outcome.stopReason == .returned)
        #expect(outcome.challengeAnswers == [0: .useCredential(user: "player", password: "level-up")])
        let line = try #require(outcome.log.first { $0.message.hasPrefix("challenge ") }?.message)
        #expect(line == "challenge secret host=localhost port=8443 protocol=https realm=levels method=NSURLAuthenticationMethodHTTPBasic previous=0")
        // The answer came 200 ms after the entry point returned; the window waited for it.
        #expect(outcome.elapsed >= .milliseconds(200))
    }

    @Test func aSecondRefusalIsCancelled() throws {
        var again = challenge
        again.previousFailureCount = 1
        let outcome = try ExtensionWindow(
            pluginPath: try TestPlugins.c("probes/answers_challenges"), appGroup: try container(credential: "player:wrong")
        ).run([.challenge(download, again)])
        #expect(outcome.challengeAnswers == [0: .cancelAuthenticationChallenge])
        #expect(outcome.log.contains { $0.message.hasSuffix("previous=1") })
    }

    /// An extension without the entry point gets Apple's default.
    @Test func withoutTheEntryPointTheAnswerIsDefaultHandling() throws {
        let outcome = try ExtensionWindow(pluginPath: try TestPlugins.c("probes/crash_once_on_finish"))
            .run([.challenge(download, challenge)])
        #expect(outcome.stopReason == .returned)
        #expect(outcome.challengeAnswers == [0: .performDefaultHandling])
    }

    /// The Swift SDK's `backgroundDownload(_:didReceive:)`, async, answers through the same entry point.
    @Test func aSwiftExtensionAnswersThroughItsAsyncMethod() throws {
        let group = try container(credential: "player:level-up")
        let outcome = try ExtensionWindow(pluginPath: TestPlugins.swiftExample, appGroup: group)
            .run([.challenge(download, challenge)])
        #expect(outcome.stopReason == .returned, "\(outcome.log)")
        #expect(outcome.challengeAnswers == [0: .useCredential(user: "player", password: "level-up")])
    }
}
