import Foundation
import ServiceWire
import Testing
import Vocabulary

/// The service's protocol, frame by frame, pinned: what the one encoder (the Swift SDK's, which the C library and
/// through it every binding use) writes for each kind of message, byte for byte, and that the service's decoder
/// reads those bytes back. A change here is a change of the protocol: raise `ServiceProtocol.version`, so that a
/// library and a service of different versions refuse each other with a clear error instead of misreading.
@Suite struct GoldenFrameTests {
    static let download = Download(
        kind: .url, identifier: "level-1", uniqueIdentifier: "u1", url: "https://a.example/l1",
        applicationGroupIdentifier: "group.x", fileSize: 300, priority: 50, state: 1, isEssential: false,
        sha256: nil, httpHeaders: ["X-A: 1"])

    static let clientFrames: [(String, ClientMessage, String)] = [
        ("hello", .request(id: 1, .hello(Hello(role: .app, appIdentifier: "com.example.levels"))), 
            "7b2272657175657374223a7b225f31223a7b2268656c6c6f223a7b225f30223a7b226170704964656e74696669657222"
            + "3a22636f6d2e6578616d706c652e6c6576656c73222c2270726f746f636f6c56657273696f6e223a332c22726f6c6522"
            + "3a22617070227d7d7d2c226964223a317d7d"),
        ("schedule", .request(id: 2, .schedule(download)), 
            "01010200000000000000000000000000000007000000000000006c6576656c2d31010200000000000000753101140000"
            + "000000000068747470733a2f2f612e6578616d706c652f6c31070000000000000067726f75702e782c01000000000000"
            + "32000000000000000100000000000000000001000000000000000600000000000000582d413a20310000000000000000"),
        ("currentDownloads", .request(id: 3, .currentDownloads), "01040300000000000000"),
        ("setDelegate", .request(id: 4, .setDelegate(true)), "0105040000000000000001"),
        ("callbackReply", .callbackReply(id: 5, CallbackReply(handled: true, disposition: 0, user: "u", password: "p")), 
            "7b2263616c6c6261636b5265706c79223a7b225f31223a7b22646973706f736974696f6e223a302c2268616e646c6564"
            + "223a747275652c2270617373776f7264223a2270222c2275736572223a2275227d2c226964223a357d7d"),
    ]

    static let serviceFrames: [(String, ServiceMessage, String)] = [
        ("ok", .reply(id: 2, .ok), "01100200000000000000"),
        ("downloads", .reply(id: 3, .downloads([download])), 
            "011103000000000000000100000000000000000000000000000007000000000000006c6576656c2d3101020000000000"
            + "0000753101140000000000000068747470733a2f2f612e6578616d706c652f6c31070000000000000067726f75702e78"
            + "2c0100000000000032000000000000000100000000000000000001000000000000000600000000000000582d413a2031"
            + "0000000000000000"),
        ("failure", .reply(id: 2, .failure(HostError(code: 101, domain: "BAErrorDomain", message: "not scheduled"))), 
            "0112020000000000000065000000000000000d0000000000000042414572726f72446f6d61696e0d000000000000006e"
            + "6f74207363686564756c6564"),
        ("progress", .event(.progress(download, bytesWritten: 10, totalBytesWritten: 20, totalBytesExpected: 300)), 
            "01220000000000000000000000000000000007000000000000006c6576656c2d31010200000000000000753101140000"
            + "000000000068747470733a2f2f612e6578616d706c652f6c31070000000000000067726f75702e782c01000000000000"
            + "32000000000000000100000000000000000001000000000000000600000000000000582d413a20310000000000000000"
            + "0a0000000000000014000000000000002c01000000000000"),
        ("finished", .callback(id: 6, .finished(download, filePath: "/d/level-1")), 
            "01300600000000000000000000000000000007000000000000006c6576656c2d31010200000000000000753101140000"
            + "000000000068747470733a2f2f612e6578616d706c652f6c31070000000000000067726f75702e782c01000000000000"
            + "32000000000000000100000000000000000001000000000000000600000000000000582d413a20310000000000000000"
            + "0a000000000000002f642f6c6576656c2d31"),
    ]

    @Test func clientFramesAreWhatTheyWere() throws {
        for (name, message, golden) in Self.clientFrames {
            let frame = try ServiceProtocol.encode(message)
            #expect(frame.lowercaseHex == golden, "\(name): \(frame.lowercaseHex)")
            let decoded = try ServiceProtocol.decodeClientMessage(Data(golden.hexBytes))
            #expect(String(describing: decoded) == String(describing: message), "\(name)")
        }
    }

    @Test func serviceFramesAreWhatTheyWere() throws {
        for (name, message, golden) in Self.serviceFrames {
            let frame = try ServiceProtocol.encode(message)
            #expect(frame.lowercaseHex == golden, "\(name): \(frame.lowercaseHex)")
            let decoded = try ServiceProtocol.decodeServiceMessage(Data(golden.hexBytes))
            #expect(String(describing: decoded) == String(describing: message), "\(name)")
        }
    }
}

extension String {
    fileprivate var hexBytes: [UInt8] {
        stride(from: 0, to: count, by: 2).compactMap { offset in
            let start = index(startIndex, offsetBy: offset)
            return UInt8(self[start..<index(start, offsetBy: 2)], radix: 16)
        }
    }
}
