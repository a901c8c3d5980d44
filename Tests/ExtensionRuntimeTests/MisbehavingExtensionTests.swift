import ExtensionRuntime
import Foundation
import Synchronization
import Testing
import TestSupport
import Vocabulary

/// Each misbehaving extension in Plugins/C/misbehaving ends with its exact stop reason, and the host carries on.
@Suite(.ownThreads) struct MisbehavingExtensionTests {
    @Test func hangInEntryPointGetsWillTerminateThenIsKilled() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/hang_in_entry"), limits: shortLimits)
        #expect(outcome.stopReason == .budgetExceeded(willTerminateReturned: true))
        // willTerminate ran while downloads(for:) was still stuck on the entry thread.
        #expect(outcome.log.map(\.message) == ["stuck in downloads_for_request", "willTerminate called"])
        let sent = try #require(outcome.willTerminateSentAt)
        #expect(sent >= 1.0 && sent < 2.0)
        // Killed as soon as willTerminate returned, well before the grace period ended.
        #expect(outcome.elapsed >= .seconds(1) && outcome.elapsed < .seconds(2))
        #expect(outcome.completedEvents == 0)
        #expect(try hostStillWorks())
    }

    @Test func hangInWillTerminateIsKilledAfterTheGrace() throws {
        let outcome = try runContentRequest(
            try TestPlugins.c("misbehaving/hang_in_will_terminate"), limits: shortLimits)
        #expect(outcome.stopReason == .budgetExceeded(willTerminateReturned: false))
        #expect(outcome.log.map(\.message) == ["willTerminate called; hanging in it"])
        // The kill came when the grace after willTerminate ran out.
        let sent = try #require(outcome.willTerminateSentAt)
        let killed = try #require(outcome.killSentAt)
        #expect(killed - sent >= shortLimits.grace.inSeconds && killed - sent < shortLimits.grace.inSeconds + 1)
        #expect(outcome.elapsed >= .milliseconds(1500) && outcome.elapsed < .seconds(3))
        #expect(try hostStillWorks())
    }

    @Test func segfaultIsACrashWithItsSignal() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/segfault"))
        #expect(outcome.stopReason == .crashed(signal: SIGSEGV))
        // It added a download first, but downloads(for:) never returned: nothing is scheduled.
        #expect(outcome.returnedDownloads.isEmpty)
        // What it logged a moment before the crash, which the runner was still holding to send with the next
        // messages, was sent by the crash's signal handler.
        #expect(outcome.log.map(\.message) == ["about to dereference NULL"])
        #expect(try hostStillWorks())
    }

    @Test func exitInTheMiddleIsAnExitWithItsCode() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/calls_exit"))
        #expect(outcome.stopReason == .exited(code: 3))
        #expect(try hostStillWorks())
    }

    @Test func unboundedAllocationIsKilledForMemory() throws {
        let limits = WindowLimits(budget: .seconds(20), grace: .milliseconds(500), memoryBytes: 64 << 20)
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/allocates_without_bound"), limits: limits)
        #expect(outcome.stopReason == .killedForMemory(limitBytes: 64 << 20))
        #expect(outcome.peakResidentBytes > 64 << 20)
        #expect(outcome.elapsed < .seconds(10))
        #expect(try hostStillWorks())
    }

    @Test func garbageDownloadIsAProtocolViolationAndNothingIsKept() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/returns_garbage"))
        guard case .protocolViolation(let message) = outcome.stopReason else {
            Issue.record("expected a protocol violation, got \(outcome.stopReason)")
            return
        }
        #expect(message.contains("struct_size"))
        // The one good download it returned before the garbage is not trusted either.
        #expect(outcome.returnedDownloads.isEmpty)
        #expect(try hostStillWorks())
    }

    @Test func textThatIsNotUTF8IsAProtocolViolation() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/returns_bad_utf8"))
        #expect(outcome.stopReason == .protocolViolation("the extension sent a string that is not UTF-8 text"))
        #expect(try hostStillWorks())
    }

    @Test func aDownloadOverTheSizeLimitsIsRefusedNamingTheLimit() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/returns_huge_identifier"))
        #expect(outcome.stopReason == .protocolViolation(
            "downloads_for_request added a malformed download: the identifier is longer than 1024 bytes"))
        #expect(try hostStillWorks())
    }

    @Test func returningMoreThanAHundredThousandDownloadsIsAProtocolViolation() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/returns_too_many"))
        #expect(outcome.stopReason == .protocolViolation("the extension returned more than 100000 downloads"))
        #expect(outcome.returnedDownloads.isEmpty)
        #expect(try hostStillWorks())
    }

    @Test func bytesWrittenStraightIntoTheSocketAreAProtocolViolation() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/writes_to_host_socket"), limits: shortLimits)
        #expect(outcome.stopReason == .protocolViolation("the extension sent a truncated or malformed packet"))
        // Killed at once, not left to run out its budget.
        #expect(outcome.elapsed < .seconds(1))
        #expect(try hostStillWorks())
    }

    @Test func floodingTheHostDoesNotStopItsDeadline() throws {
        let outcome = try runContentRequest(
            try TestPlugins.c("misbehaving/floods_the_host"), manifest: "forever", limits: shortLimits)
        #expect(outcome.stopReason == .budgetExceeded(willTerminateReturned: true))
        #expect(outcome.elapsed < .seconds(2))
        #expect(try hostStillWorks())
    }

    @Test func theLogIsBoundedAndSaysWhatItDropped() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/floods_the_host"), manifest: "burst")
        #expect(outcome.stopReason == .returned)
        // 40 KiB without a newline is cut into lines of at most 16 KiB: 16 + 16 now, and the last 8 when the window
        // ends, the tail's last line.
        let output = outcome.log.filter { $0.source == .output }.map(\.message.utf8.count)
        #expect(output == [16_384, 16_384, 8_192])
        // 3 output lines and 10,500 log lines: the head and the tail are kept, each at most 256 KiB (counting 64
        // bytes a line), and one line between them counts the rest; the last line is the output left without a
        // newline.
        let marker = try #require(outcome.log.firstIndex { $0.source == .warning && $0.message.hasPrefix("bahost: ") })
        let (head, tail) = (outcome.log[..<marker], outcome.log[(marker + 1)...])
        #expect(tail.last?.message.utf8.count == 8_192)
        for part in [head, tail] { #expect(part.reduce(0) { $0 + $1.message.utf8.count + 64 } <= 256 * 1024) }
        let dropped = 10_503 - head.count - tail.count
        #expect(dropped > 0 && head.count > 3_000 && tail.count > 3_000)
        #expect(outcome.log[marker].message
            == "bahost: \(dropped) lines (\(dropped * 5) bytes) of output were not kept between the first and the last")
    }

    /// Log messages reach the host in batches, printed output at once: a line printed before a message is logged
    /// must still come before it in the window's log. (A host that read a batch before the output waiting beside it
    /// put the last lines printed after the messages that followed them; it failed this test nearly every time.)
    @Test func whatWasPrintedBeforeAMessageIsLoggedBeforeIt() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/floods_the_host"), manifest: "order")
        #expect(outcome.stopReason == .returned)
        var printed: [Int: Int] = [:], logged: [Int: Int] = [:]
        for (position, line) in outcome.log.enumerated() {
            let words = line.message.split(separator: " ")
            guard words.count >= 2, let number = Int(words[1]) else { continue }
            if line.source == .output && words[0] == "printed" { printed[number] = position }
            if line.source != .output && words[0] == "logged" { logged[number] = position }
        }
        #expect(printed.count == 700 && logged.count == 700)
        let outOfOrder = (0..<700).filter { (printed[$0] ?? .max) > (logged[$0] ?? -1) }
        #expect(outOfOrder.isEmpty, "printed after the message that followed it: \(outOfOrder.prefix(10))")
    }

    @Test func missingEntrySymbolIsRefused() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/no_entry_symbol"))
        guard case .refusedToLoad(.missingEntry, let message) = outcome.stopReason else {
            Issue.record("expected missingEntry, got \(outcome.stopReason)")
            return
        }
        #expect(message.contains("does not export ba_extension_entry"))
        #expect(outcome.activation == nil)
        #expect(try hostStillWorks())
    }

    @Test func incompatibleABIIsRefused() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/incompatible_abi"))
        #expect(outcome.stopReason == .refusedToLoad(
            .incompatibleABI, "the extension was built for ABI 2.0; this host speaks ABI 1.x"))
        #expect(try hostStillWorks())
    }

    @Test func notAnELFFileIsRefused() throws {
        let notELF = try TestPlugins.file("This is text, not a shared object.\n", name: "not_elf.so")
        let outcome = try runContentRequest(notELF)
        guard case .refusedToLoad(.notLoadable, let message) = outcome.stopReason else {
            Issue.record("expected notLoadable, got \(outcome.stopReason)")
            return
        }
        #expect(message.hasSuffix("not_elf.so is not an ELF shared object"))
        let missing = try runContentRequest("/nonexistent/extension.so")
        guard case .refusedToLoad(.notLoadable, let missingMessage) = missing.stopReason else {
            Issue.record("expected notLoadable, got \(missing.stopReason)")
            return
        }
        #expect(missingMessage.contains("No such file"))
        #expect(try hostStillWorks())
    }

    @Test func schedulingInsideTheContentRequestIsRefusedWith50() throws {
        let outcome = try runContentRequest(
            try TestPlugins.c("misbehaving/schedules_inside_request"), services: inMemoryServices())
        #expect(outcome.stopReason == .returned)
        #expect(outcome.refusedCalls.map(\.identifier) == ["sneaky"])
        #expect(outcome.refusedCalls.first?.error.code == 50)
        #expect(outcome.refusedCalls.first?.error.domain == "BAErrorDomain")
        #expect(outcome.returnedDownloads.map(\.identifier) == ["returned"])
    }

    @Test func forkedChildThatOutlivesTheExtensionIsKilledAndNotWaitedFor() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/forks_child"))
        #expect(outcome.stopReason == .returned)
        // The child holds the socket and the pipe open, yet the window ended when the extension returned.
        #expect(outcome.elapsed < .seconds(2))
        #expect(outcome.log.first?.message == "forked ba-forked-child")
        #expect(waitUntilGone(["ba-forked-child"]))
        #expect(try hostStillWorks())
    }

    /// 400 MB of 200 KB log messages: the host keeps what the report keeps and frees the rest as it goes, so its own
    /// memory grows by a bounded amount (it held every dropped line until thousands piled up: about 800 MiB).
    @Test(.alone) func hugeLogMessagesDoNotTakeTheHostsMemory() throws {
        let (outcome, growth) = try peakGrowthOfThisProcess {
            try runContentRequest(
                try TestPlugins.c("misbehaving/logs_huge_messages"),
                limits: WindowLimits(budget: .seconds(60), grace: .seconds(1), memoryBytes: 128 << 20))
        }
        #expect(outcome.stopReason == .returned)
        #expect(outcome.returnedDownloads.map(\.identifier) == ["after-the-flood"])
        // Each message reached the host cut to a line of at most 16 KiB, saying so.
        let kept = outcome.log.filter { $0.source == .info }
        #expect(!kept.isEmpty && kept.allSatisfy { $0.message.utf8.count <= 16 * 1024 })
        #expect(kept.first?.message.hasSuffix("more bytes cut by bahost)") == true)
        #expect(growth < 64 << 20, "the host grew by \(growth >> 20) MiB")
        #expect(try hostStillWorks())
    }

    /// Lines of 16 KiB printed as fast as the extension can for a whole budget: the lines the host drops between
    /// the log's head and tail are freed as they go.
    @Test(.alone) func aFloodOfOutputDoesNotTakeTheHostsMemory() throws {
        let (outcome, growth) = try peakGrowthOfThisProcess {
            try runContentRequest(
                try TestPlugins.c("misbehaving/floods_the_host"), manifest: "lines",
                limits: WindowLimits(budget: .seconds(2), grace: .milliseconds(500), memoryBytes: 128 << 20))
        }
        #expect(outcome.stopReason == .budgetExceeded(willTerminateReturned: true))
        let dropped = try #require(outcome.log.first { $0.message.hasPrefix("bahost: ") && $0.source == .warning })
        #expect(dropped.message.contains("were not kept"))
        // What the report keeps is 512 KiB; dropped lines held until 4,096 piled up were 64 MiB.
        #expect(growth < 24 << 20, "the host grew by \(growth >> 20) MiB")
    }

    /// A 1 MiB message is more than one packet to the host can hold: the runner cuts it (on a character boundary)
    /// instead of dying of it, and the download returned after it is kept.
    @Test func aMebibyteLogMessageIsCutAndNothingIsLost() throws {
        let outcome = try runContentRequest(try TestPlugins.c("misbehaving/logs_a_mebibyte"))
        #expect(outcome.stopReason == .returned)
        #expect(outcome.returnedDownloads.map(\.identifier) == ["kept"])
        let cut = try #require(outcome.log.first { $0.source == .warning })
        #expect(cut.message.utf8.count <= 16 * 1024)
        #expect(cut.message.hasPrefix("xéé") && !cut.message.contains("\u{FFFD}"))
        #expect(cut.message.hasSuffix("more bytes cut by bahost)"))
        #expect(outcome.log.last?.message == "still here")
    }
}

/// What `body` returns, and how far this process's resident memory rose above where it started while it ran.
func peakGrowthOfThisProcess<T>(_ body: () throws -> T) rethrows -> (T, Int64) {
    let peak = Mutex<Int64>(0)
    let sampling = Atomic<Bool>(true)
    let before = residentBytesOfThisProcess()
    let sampler = Thread {
        while sampling.load(ordering: .relaxed) {
            let now = residentBytesOfThisProcess()
            peak.withLock { $0 = max($0, now) }
            Thread.sleep(forTimeInterval: 0.005)
        }
    }
    sampler.start()
    defer { sampling.store(false, ordering: .relaxed) }
    let result = try body()
    return (result, peak.withLock { $0 } - before)
}

/// This test process's resident memory.
func residentBytesOfThisProcess() -> Int64 {
    let statm = (try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8)) ?? ""
    let pages = statm.split(separator: " ").dropFirst().first.flatMap { Int64($0) } ?? 0
    return pages * Int64(sysconf(Int32(_SC_PAGESIZE)))
}
