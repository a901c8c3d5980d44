import Foundation
import Testing
import TestSupport

/// `bahost peers`: a household made on one machine, its code carried to another, and what is refused.
@Suite struct PeersCommandTests {
    let root = TestPlugins.scratch.appendingPathComponent("peers-cli-\(UUID().uuidString.prefix(8))")

    func peers(_ machine: String, _ arguments: [String]) throws -> Bahost.Result {
        try Bahost.run(
            ["peers"] + arguments,
            environment: [
                "XDG_CONFIG_HOME": root.appendingPathComponent(machine).path, "BAHOST_SOCKET": "/nonexistent",
            ])
    }

    func json(_ result: Bahost.Result) throws -> [String: Any] {
        try #require(JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
    }

    @Test func aHouseholdIsMadeOnceAndItsCodePairsAnotherMachine() throws {
        let unpaired = try peers("first", ["show"])
        #expect(unpaired.status == 0 && unpaired.stdout.contains("not paired"), "\(unpaired.stdout)")

        let made = try json(try peers("first", ["pair", "--json"]))
        let household = try #require(made["household"] as? String)
        let code = try #require(made["code"] as? String)
        #expect(code.hasPrefix("bahost-household:"))
        // Asked again, the same household and code: pairing twice makes no second household.
        #expect(try json(try peers("first", ["pair", "--json"]))["household"] as? String == household)
        let file = try #require(made["pairingFile"] as? String)
        var info = stat()
        #expect(stat(file, &info) == 0 && info.st_mode & 0o777 == 0o600)

        let second = try json(try peers("second", ["pair", code, "--json"]))
        #expect(second["household"] as? String == household)
        #expect(try peers("second", ["show"]).stdout.contains("shares with the machines of household \(household)"))

        // Another household's code is refused while paired, unless the person says to leave this one.
        let other = try json(try peers("third", ["pair", "--json"]))["code"] as? String ?? ""
        let refused = try peers("second", ["pair", other])
        #expect(refused.status == 2 && refused.stderr.contains("--replace"), "\(refused.stderr)")
        #expect(!refused.stderr.contains(other), "a code holds a key: it is never printed back")
        #expect(try peers("second", ["pair", other, "--replace"]).status == 0)

        #expect(try peers("second", ["unpair"]).stdout.contains("unpaired"))
        #expect(try peers("second", ["show"]).stdout.contains("not paired"))
    }

    @Test func whatIsNotACodeIsRefusedNamingWhy() throws {
        let garbage = try peers("m", ["pair", "hello"])
        #expect(garbage.status == 2 && garbage.stderr.contains("not a code"), "\(garbage.stderr)")
        let half = Data("-----BEGIN CERTIFICATE-----\nQUFB\n".utf8).base64EncodedString()
        let cut = try peers("m", ["pair", "bahost-household:" + half])
        #expect(cut.status == 2 && cut.stderr.contains("copy it whole"), "\(cut.stderr)")
        let huge = try peers("m", ["pair", "bahost-household:" + String(repeating: "A", count: 20_000)])
        #expect(huge.status == 2 && huge.stderr.contains("over 16384 bytes"), "\(huge.stderr)")
        #expect(try peers("m", ["show"]).stdout.contains("not paired"))
    }
}
