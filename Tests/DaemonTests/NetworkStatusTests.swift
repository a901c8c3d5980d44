import Foundation
import Testing
import TestSupport

/// What `bahost debug status` says of the network, and `bahost debug max-rate`, against a real daemon.
@Suite(.ownThreads) struct NetworkStatusTests {
    @Test func theRateLimitAndTheProxiesInForceAreShownWithoutCredentialsAndTheLimitChangesAtRunTime() throws {
        let daemon = try ServiceDaemon(
            extra: ["--max-rate", "512K"],
            environment: ["https_proxy": "http://player:hunter2@127.0.0.1:9", "no_proxy": "localhost,127.0.0.1"])
        func network() throws -> [String: Any] {
            try #require(try daemon.report(["debug", "status"]).report["network"] as? [String: Any])
        }
        let first = try network()
        #expect(first["maximumRate"] as? Int == 512 * 1024)
        let proxy = try #require(first["proxy"] as? [String: Any])
        #expect(proxy["source"] as? String == "environment")
        let https = proxy["https"] as? [String: Any]
        #expect(https?["proxy"] as? String == "http://127.0.0.1:9" && https?["credentials"] as? Bool == true, "\(proxy)")
        #expect(proxy["noProxy"] as? String == "localhost,127.0.0.1")
        #expect(first["waitingHosts"] as? [Any] != nil)
        let text = try daemon.bahost(["debug", "status"]).stdout
        #expect(text.contains("proxy: from the environment: https through http://127.0.0.1:9 (with credentials)"), "\(text)")
        #expect(text.contains("at most 512 KiB/s"), "\(text)")
        #expect(!text.contains("hunter2") && !daemon.logText.contains("hunter2"))

        #expect(try daemon.bahost(["debug", "max-rate", "2M"]).status == 0)
        #expect(try network()["maximumRate"] as? Int == 2 << 20)
        #expect(try daemon.bahost(["debug", "max-rate", "off"]).status == 0)
        #expect(try network()["maximumRate"] is NSNull)
        let refused = try daemon.bahost(["debug", "max-rate", "fast"])
        #expect(refused.status != 0 && refused.stderr.contains("'fast'"), "\(refused.stderr)")
    }

    /// The service follows the system bus (a private one, with python3-dbusmock's NetworkManager and logind):
    /// `bahost debug status` shows what NetworkManager says, what that holds back, and the sleep inhibitor; without
    /// a system bus it says so.
    @Test(.enabled(if: SystemBusLab.unavailable == nil, "\(SystemBusLab.unavailable ?? "")"))
    func theNetworksConditionsAndTheSleepInhibitorAreShown() throws {
        let bus = try SystemBusLab(metered: 3)
        defer { bus.close() }
        let daemon = try ServiceDaemon(environment: bus.environment)
        func network() throws -> [String: Any] {
            try #require(try daemon.report(["debug", "status"]).report["network"] as? [String: Any])
        }
        #expect(ServiceDaemon.waitUntil(10) { (try? network()["metered"] as? String) == "guessYes" })
        let first = try network()
        #expect(first["systemBus"] as? Bool == true && first["connectivity"] as? String == "full", "\(first)")
        #expect(first["sleepInhibitor"] as? Bool == true, "\(first)")
        let text = try daemon.bahost(["debug", "status"]).stdout
        #expect(text.contains("network conditions: connectivity full, metered guessYes"), "\(text)")
        #expect(text.contains("held: background downloads"), "\(text)")
        try bus.setMetered(4)
        #expect(ServiceDaemon.waitUntil(10) { (try? network()["metered"] as? String) == "guessNo" })
        #expect(!(try daemon.bahost(["debug", "status"]).stdout.contains("held:")))

        let alone = try ServiceDaemon()
        let report = try #require(try alone.report(["debug", "status"]).report["network"] as? [String: Any])
        #expect(report["systemBus"] as? Bool == false)
        #expect(try alone.bahost(["debug", "status"]).stdout.contains("no system bus"))
    }
}
