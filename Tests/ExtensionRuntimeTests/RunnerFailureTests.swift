import ExtensionRuntime
import Foundation
import Testing
import TestSupport
import Vocabulary

/// The runner's own failures are the runner's, not the extension's, and lose nothing the extension returned.
@Suite(.ownThreads) struct RunnerFailureTests {
    /// A stand-in for the runner that does what a failing runner does: the extension loaded, its content request
    /// returned one download, then the runner reported its own failure and exited with its failure status, leaving
    /// the host's events unread (the kernel then reports ECONNRESET to the host once, before the packets it sent).
    /// Built from the real wire encoder, so the bytes are the runner's.
    static let failingRunner: String = {
        let source = TestPlugins.scratch.appendingPathComponent("failing_runner.c")
        let program = TestPlugins.scratch.appendingPathComponent("failing-runner").path
        try! #"""
            #include "ba_wire.h"
            #include <sys/socket.h>
            #include <unistd.h>
            static void send_packet(ba_wire_writer_t *w) {
                send(3, w->bytes, w->length, MSG_NOSIGNAL);
                ba_wire_writer_free(w);
            }
            int main(void) {
                ba_wire_writer_t w;
                ba_wire_writer_init(&w, BA_WIRE_HELLO);
                ba_wire_put_u32(&w, 1), ba_wire_put_u32(&w, 1), ba_wire_put_str(&w, "com.example.failing");
                send_packet(&w);
                usleep(100 * 1000); /* the host's events arrive, and are never read */
                ba_download_t d = {.struct_size = sizeof d, .identifier = "returned",
                    .url = "https://assets.example.com/a", .application_group_identifier = "group.g", .file_size = 1};
                ba_wire_writer_init(&w, BA_WIRE_DOWNLOAD);
                ba_wire_put_u32(&w, 1);
                ba_wire_put_download(&w, &d);
                send_packet(&w);
                ba_wire_writer_init(&w, BA_WIRE_EVENT_DONE);
                ba_wire_put_u32(&w, 1);
                send_packet(&w);
                ba_wire_writer_init(&w, BA_WIRE_RUNNER_FAILED);
                ba_wire_put_str(&w, "bahost-extension-runner: out of memory for a packet from the host");
                send_packet(&w);
                _exit(71);
            }
            """#.write(to: source, atomically: true, encoding: .utf8)
        let root = TestPlugins.packageRoot.path
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = [
            "cc", "-I", "\(root)/Sources/ExtensionWire/include", "-I", "\(root)/SDK/C/include", "-o", program,
            source.path, "\(root)/Sources/ExtensionWire/ba_wire.c",
        ]
        try! cc.run()
        cc.waitUntilExit()
        precondition(cc.terminationStatus == 0, "cc failed on the failing runner")
        return program
    }()

    @Test func aRunnersFailureIsReportedAsItsOwnAndKeepsWhatWasReturned() throws {
        let manifest = try TestPlugins.file("", name: "manifest")
        let window = try ExtensionWindow(
            pluginPath: try TestPlugins.c("example_extension"), runnerPath: Self.failingRunner)
        let outcome = try window.run([.contentRequest(.install, manifestPath: manifest, info: .unrestricted)])
        #expect(outcome.stopReason == .runnerFailed(
            "bahost-extension-runner: out of memory for a packet from the host"))
        #expect(outcome.stopReason.summary.hasPrefix("the host's runner failed (not the extension)"))
        #expect(outcome.returnedDownloads.map(\.identifier) == ["returned"])
    }
}
