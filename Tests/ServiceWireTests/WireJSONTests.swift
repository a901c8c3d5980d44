import Foundation
import ServiceWire
import Testing
import Vocabulary

/// The protocol's own JSON coder (`WireJSON`, without Foundation) held to Foundation's `JSONEncoder` with the
/// protocol's settings: the same bytes for every kind of message, each read back to the same message; and the
/// refusals of what is not JSON.
@Suite struct WireJSONTests {
    static let tricky = "q\"\\/\u{1}\u{8}\u{c}\n\r\t\u{1f}\u{7f}é\u{2028}😀 ünï"
    static let download = Download(
        kind: .url, identifier: tricky, uniqueIdentifier: "BAURLDownload.g.1", url: "https://a.example/l1?x=1&y=/z",
        applicationGroupIdentifier: "group.x", fileSize: Int64.max, priority: -1, state: -1, isEssential: true,
        sha256: String(repeating: "ab", count: 32), httpHeaders: ["X-A: 1", "Authorization: Basic \(tricky)"])
    static let bare = Download(identifier: "b", url: nil, applicationGroupIdentifier: "g", fileSize: 0)
    static let error = HostError(code: 101, domain: "BAErrorDomain", message: tricky)
    static let pack = AssetPackInfo(
        id: "intro", version: 3, downloadSize: 1 << 40, userInfo: Array(#"{"a":[1,2]}"#.utf8), language: "pt-BR")
    static let challenge = AuthenticationChallenge(
        host: "localhost", port: 8443, scheme: "https", realm: nil, authenticationMethod: "NSURLAuthenticationMethodHTTPBasic",
        previousFailureCount: 2)

    static let clientMessages: [ClientMessage] = [
        .request(id: 1, .hello(Hello(role: .app, appIdentifier: "com.example.levels"))),
        .request(id: 2, .hello(Hello(role: .control, appIdentifier: nil))),
        .request(id: UInt64.max, .schedule(download)),
        .request(id: 3, .assetPacks),
        .request(id: 4, .assetPackStatus("intro")),
        .request(id: 5, .ensureAssetPack("intro", requireLatestVersion: true)),
        .request(id: 6, .cancelAssetPackDownload(tricky)),
        .request(id: 7, .checkForAssetPackUpdates),
        .request(id: 8, .removeAssetPack("intro")),
        .request(id: 9, .assetPackLanguages),
        .request(id: 10, .setAssetPackLanguage(nil)),
        .request(id: 11, .setAssetPackLanguage("fr")),
        .request(id: 12, .reconcileAssetPackLanguages(preferred: ["fr-CA", "en"])),
        .request(id: 13, .control(.install(appDirectory: "/apps/Levels"))),
        .request(id: 14, .control(.setConditions(SystemConditions(powerSaver: true, batteryLow: nil, metered: false)))),
        .request(id: 15, .control(.overrideManifestURL(appIdentifier: nil, url: "https://x/m"))),
        .request(id: 16, .control(.advanceClock(seconds: 1.5e-7))),
        .request(id: 17, .control(.advanceClock(seconds: 86400))),
        .request(id: 18, .control(.status)),
        .callbackReply(id: 19, CallbackReply(handled: true, disposition: 0, user: "u", password: tricky)),
        .callbackReply(id: 20, CallbackReply(handled: false)),
    ]

    static let serviceMessages: [ServiceMessage] = [
        .reply(id: 1, .hello(HelloReply(serviceVersion: "0.3.0", exclusiveControlLockPath: "/run/l", appGroupIdentifier: "g",
                                       containerPath: "/c/g"))),
        .reply(id: 2, .hello(HelloReply(serviceVersion: "0.3.0"))),
        .reply(id: 3, .assetPacks([pack, AssetPackInfo(id: "x", version: 1, downloadSize: 0, userInfo: nil)])),
        .reply(id: 4, .assetPackStatus(7)),
        .reply(id: 5, .assetPackUpdates(updating: ["a", "b"], removed: [])),
        .reply(id: 6, .assetPackLanguages(primary: "en", resolved: nil)),
        .reply(id: 7, .report(ControlReport(success: true, text: tricky, json: #"{"a": 1}"#))),
        .callback(id: 8, .challenge(download, challenge)),
        .event(.assetPack(pack, .downloading(completed: 10, total: 20))),
        .event(.assetPack(pack, .failed(error))),
        .event(.assetPack(pack, .began)),
    ]

    static func foundation<T: Encodable>(_ value: T) throws -> [UInt8] {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return Array(try encoder.encode(value))
    }

    @Test func everyMessageIsWrittenAsFoundationWritesItAndReadBack() throws {
        for message in Self.clientMessages {
            let written = try WireJSON.encode(message)
            #expect(written == (try Self.foundation(message)), "\(String(decoding: written, as: UTF8.self))")
            let read = try WireJSON.decode(ClientMessage.self, from: try Self.foundation(message))
            #expect(String(describing: read) == String(describing: message))
        }
        for message in Self.serviceMessages {
            let written = try WireJSON.encode(message)
            #expect(written == (try Self.foundation(message)), "\(String(decoding: written, as: UTF8.self))")
            let read = try WireJSON.decode(ServiceMessage.self, from: try Self.foundation(message))
            #expect(String(describing: read) == String(describing: message))
        }
    }

    /// What another writer may send that Foundation's would not: spaces, escapes of any character, numbers in other
    /// forms, keys in any order.
    @Test func otherWritersJSONIsRead() throws {
        let text = #" { "id" : 4.0e0 , "callbackReply" : 1 } "#
        struct Probe: Decodable { var id: Int; var callbackReply: UInt8 }
        let probe = try WireJSON.decode(Probe.self, from: Array(text.utf8))
        #expect(probe.id == 4 && probe.callbackReply == 1)
        let escaped = try WireJSON.decode([String].self, from: Array(#"["\u00e9\/\ud83d\ude00\u0041"]"#.utf8))
        #expect(escaped == ["é/😀A"])
    }

    @Test(arguments: [
        ("", "the end"), ("{", "no key"), ("[1,]", "not a value"), ("{\"a\":1,}", "no key"), ("01", "not a value"),
        ("1.", "after its point"), ("1e", "exponent"), ("\"a\u{1}\"", "control character"), ("\"\\x\"", "unknown escape"),
        ("\"\\ud800\"", "surrogate"), ("[1] 2", "text after"), ("tru", "not true"), ("-", "not a value"),
        ("\"\\u12g4\"", "bad \\u"),
    ])
    func whatIsNotJSONIsRefusedSayingWhere(text: String, reason: String) {
        #expect {
            _ = try WireJSON.decode([Int].self, from: Array(text.utf8))
        } throws: { error in
            "\(error)".contains(reason)
        }
    }

    @Test func aStringNotUTF8AndNestingPastTheLimitAreRefused() {
        #expect(throws: DecodingError.self) { try WireJSON.decode(String.self, from: [0x22, 0xFF, 0xFE, 0x22]) }
        let deep = String(repeating: "[", count: WireJSON.maximumDepth + 1) + String(repeating: "]", count: WireJSON.maximumDepth + 1)
        #expect {
            _ = try WireJSON.decode([Int].self, from: Array(deep.utf8))
        } throws: { error in
            "\(error)".contains("deeper than \(WireJSON.maximumDepth)")
        }
        let allowed = String(repeating: "[", count: WireJSON.maximumDepth) + String(repeating: "]", count: WireJSON.maximumDepth)
        #expect(throws: Never.self) { _ = try WireJSON.decode(Nest.self, from: Array(allowed.utf8)) }
    }

    @Test func aValueOfAnotherTypeIsATypeMismatchAndAMissingKeyNamesIt() {
        struct Probe: Decodable { var id: Int }
        #expect(throws: DecodingError.self) { _ = try WireJSON.decode(Probe.self, from: Array(#"{"id":"1"}"#.utf8)) }
        #expect(throws: DecodingError.self) { _ = try WireJSON.decode(Probe.self, from: Array(#"{"id":1.5}"#.utf8)) }
        struct Small: Decodable { var id: UInt8 }
        #expect(throws: DecodingError.self) { _ = try WireJSON.decode(Small.self, from: Array(#"{"id":300}"#.utf8)) }
        #expect {
            _ = try WireJSON.decode(Probe.self, from: Array(#"{"di":1}"#.utf8))
        } throws: { error in
            "\(error)".contains("no \"id\"")
        }
    }
}

/// Arrays in arrays, to any depth.
private struct Nest: Decodable {
    init(from decoder: any Decoder) throws {
        var items = try decoder.unkeyedContainer()
        while !items.isAtEnd { _ = try items.decode(Nest.self) }
    }
}
