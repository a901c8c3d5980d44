import Foundation
import ServiceWire
import Synchronization
import Testing
import TestSupport

@testable import Service

/// The service's sends to one connection (`SessionOutbox`) over a real socket pair: in order whatever the socket
/// took at once, never waiting for the peer, and bounded.
@Suite(.ownThreads) struct SessionOutboxTests {
    /// A connected pair: the service's end and the client's.
    func pair() throws -> (service: FramedSocket, client: FramedSocket) {
        var fds: [Int32] = [0, 0]
        try #require(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (FramedSocket(descriptor: fds[0]), FramedSocket(descriptor: fds[1]))
    }

    /// A frame of `size` bytes that says which it is in every byte.
    func frame(_ index: Int, size: Int) -> Frame {
        Frame((0..<size).map { UInt8(truncatingIfNeeded: index &* 31 &+ $0 / 256) })
    }

    /// Far more than the socket holds, sent while the peer reads nothing: no send waits, and the peer then reads
    /// every frame whole and in order.
    @Test func framesTheSocketCouldNotTakeAreSentInOrderAsThePeerReads() throws {
        let (service, client) = try pair()
        let closed = Mutex<String?>(nil)
        let outbox = SessionOutbox(socket: service, limits: .init(unreadBytes: 64 << 20, stall: .seconds(30))) {
            reason in closed.withLock { $0 = reason }
        }
        let sizes = (0..<400).map { [100, 5_000, 70_000, 1][$0 % 4] }
        let frames = sizes.enumerated().map { frame($0.offset, size: $0.element) }
        let start = ContinuousClock.now
        for frame in frames { #expect(outbox.send(frame) == .accepted) }
        // 7.5 MB against a socket buffer of a few hundred KiB: a send that waited for the peer would wait until the
        // stall bound (30 s) closed the connection. The bound here is below that and far above a loaded machine's
        // time for the sends alone (the frames are made before the clock starts).
        #expect(ContinuousClock.now - start < .seconds(20))
        for (index, size) in sizes.enumerated() {
            let received = try #require(try client.receive())
            #expect(received == frame(index, size: size), "frame \(index)")
        }
        #expect(closed.withLock { $0 } == nil)
    }

    /// Events past the bound close the connection and say which bound; a reply, whose reader waits for it, does
    /// not count against it.
    @Test func eventsPastTheBoundCloseTheConnectionNamingIt() throws {
        let (service, client) = try pair()
        let closed = Mutex<String?>(nil)
        let outbox = SessionOutbox(socket: service, limits: .init(unreadBytes: 100_000, stall: .seconds(30))) {
            reason in closed.withLock { $0 = reason }
        }
        // Fill the socket until a frame is left waiting, then up to the bound.
        var index = 0
        var sent: Sent = .accepted
        while sent == .accepted && closed.withLock({ $0 }) == nil {
            sent = outbox.send(frame(index, size: 10_000))
            index += 1
        }
        #expect(sent == .closed)
        let reason = try #require(closed.withLock { $0 })
        #expect(reason.contains("limit of 100000 bytes unread"), "\(reason)")
        #expect(outbox.send(frame(0, size: 10)) == .closed)
        // The peer reads what was sent before the close, then the end.
        var frames = 0
        while (try? client.receive()) != nil { frames += 1 }
        #expect(frames > 0 && frames < index)
    }

    typealias Sent = SessionOutbox.Sent

    /// A client that takes nothing for the stall bound is closed; one that reads slowly but steadily is not.
    @Test func aPeerThatTakesNothingForTheStallBoundIsClosed() throws {
        let (service, client) = try pair()
        let closed = Mutex<String?>(nil)
        let outbox = SessionOutbox(socket: service, limits: .init(unreadBytes: 64 << 20, stall: .milliseconds(300))) {
            reason in closed.withLock { $0 = reason }
        }
        for index in 0..<100 { outbox.send(frame(index, size: 20_000)) }
        #expect(waitUntil { closed.withLock { $0 } != nil })
        #expect(closed.withLock { $0 }?.contains("took no byte of what waited for it in 0.3 seconds") == true)
        _ = client
    }

    /// A reply from the reader thread waits until the peer took everything before it: the reader's backpressure.
    @Test func aReplyWaitsUntilThePeerTookEverything() throws {
        let (service, client) = try pair()
        let outbox = SessionOutbox(socket: service, limits: .init(unreadBytes: 64 << 20, stall: .seconds(30))) { _ in }
        for index in 0..<50 { outbox.send(frame(index, size: 50_000)) }
        let replied = Mutex<SessionOutbox.Sent?>(nil)
        let reply = frame(50, size: 100)
        let reader = Thread {
            let sent = outbox.sendAndWait(reply)
            replied.withLock { $0 = sent }
        }
        reader.start()
        usleep(200_000)
        #expect(replied.withLock { $0 } == nil)
        for index in 0...50 {
            let received = try #require(try client.receive())
            #expect(received == frame(index, size: index == 50 ? 100 : 50_000))
        }
        #expect(waitUntil { replied.withLock { $0 } == .accepted })
    }

    func waitUntil(_ seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if condition() { return true }
            usleep(10_000)
        }
        return condition()
    }
}
