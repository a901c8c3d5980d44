import Foundation
import ServiceWire
import Testing
import TestSupport

/// `FramedSocket` over a real socket pair: frames however the bytes arrive, polling or blocking.
@Suite(.ownThreads) struct FramedSocketTests {
    /// Two connected ends; the raw descriptor of the second lets a test write bytes that are not whole frames.
    private func pair() throws -> (FramedSocket, FramedSocket) {
        var fds: [Int32] = [0, 0]
        #expect(socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &fds) == 0)
        return (FramedSocket(descriptor: fds[0]), FramedSocket(descriptor: fds[1]))
    }

    private func write(_ bytes: [UInt8], to socket: FramedSocket) {
        bytes.withUnsafeBytes { raw in
            var sent = 0
            while sent < raw.count {
                let count = Glibc.send(socket.descriptor, raw.baseAddress! + sent, raw.count - sent, 0)
                guard count > 0 else { break }
                sent += count
            }
            #expect(sent == raw.count)
        }
    }

    private func frame(_ payload: [UInt8]) -> [UInt8] {
        withUnsafeBytes(of: UInt32(payload.count).bigEndian) { Array($0) } + payload
    }

    /// Several frames in one write come back one at a time, in order, then nil when the peer closes.
    @Test func framesSharingOneWriteComeBackOneByOne() throws {
        let (reader, writer) = try pair()
        write(frame([1, 2, 3]) + frame([]) + frame(Array(repeating: 7, count: 100_000)), to: writer)
        writer.close()
        #expect(try reader.receive(polling: FramedSocket.roundTripPolling) == Data([1, 2, 3]))
        #expect(try reader.receive() == Data())
        #expect(try reader.receive() == Data(repeating: 7, count: 100_000))
        #expect(try reader.receive() == nil)
    }

    /// A frame that arrives a byte at a time, its length split too, is read whole, with or without polling.
    @Test func aFrameArrivingInPiecesIsReadWhole() throws {
        let (reader, writer) = try pair()
        let payload = Array("a frame in pieces".utf8)
        for polling in [Duration.zero, .microseconds(50)] {
            let sender = Thread {
                for byte in self.frame(payload) {
                    self.write([byte], to: writer)
                    usleep(200)
                }
            }
            sender.start()
            #expect(try reader.receive(polling: polling) == Data(payload))
        }
    }

    /// Polling gives up and blocks: a frame sent long after the poll ended still arrives.
    @Test func aReaderThatPolledStillGetsALateFrame() throws {
        let (reader, writer) = try pair()
        Thread {
            usleep(100_000)
            try? writer.send(Data("late".utf8))
        }.start()
        #expect(try reader.receive(polling: .microseconds(100)) == Data("late".utf8))
    }

    /// A length over the limit is refused by name, and so is a connection that ends inside a frame.
    @Test func anOversizedOrCutFrameIsRefused() throws {
        let (reader, writer) = try pair()
        write(withUnsafeBytes(of: UInt32(FramedSocket.maximumFrame + 1).bigEndian) { Array($0) }, to: writer)
        #expect(throws: ServiceWireError.self) { try reader.receive() }
        let (cutReader, cutWriter) = try pair()
        write(Array(frame([1, 2, 3, 4]).prefix(6)), to: cutWriter)
        cutWriter.close()
        do {
            _ = try cutReader.receive()
            Issue.record("a cut frame was returned")
        } catch {
            #expect("\(error)".contains("ended inside a frame"))
        }
    }

    /// A frame larger than the kept buffer is read into its own storage: what was buffered past it (the next frame,
    /// sent in the same write) stays for the next receive, one arriving in pieces is read whole, and one cut short
    /// is refused.
    @Test func aLargeFrameLeavesTheNextOneWhole() throws {
        let large = (0..<300_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        let (reader, writer) = try pair()
        // From a thread of its own: the socket holds less than what is written.
        let sender = Thread {
            self.write(self.frame(large) + self.frame([9, 8]), to: writer)
            for piece in self.frame(large).chunks(of: 50_000) {
                self.write(Array(piece), to: writer)
                usleep(2_000)
            }
            writer.close()
        }
        sender.start()
        #expect(try reader.receive() == Data(large))
        #expect(try reader.receive() == Data([9, 8]))
        #expect(try reader.receive() == Data(large))
        #expect(try reader.receive() == nil)
        let (cutReader, cutWriter) = try pair()
        Thread {
            self.write(Array(self.frame(large).prefix(200_000)), to: cutWriter)
            cutWriter.close()
        }.start()
        do {
            _ = try cutReader.receive()
            Issue.record("a cut frame was returned")
        } catch {
            #expect("\(error)".contains("ended inside a frame"))
        }
    }
}

private extension Array {
    func chunks(of size: Int) -> [ArraySlice<Element>] {
        stride(from: 0, to: count, by: size).map { self[$0..<Swift.min($0 + size, count)] }
    }
}
