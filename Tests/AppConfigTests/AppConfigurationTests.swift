import AppConfig
import Foundation
import Testing

@Suite struct AppConfigurationTests {
    nonisolated(unsafe) static let complete: [String: Any] = [
        "CFBundleIdentifier": "com.example.levels",
        "BAAppGroupID": "group.com.example.levels",
        "BAManifestURL": "https://assets.example.com/manifest.json",
        "BAInitialDownloadRestrictions": [
            "BADownloadAllowance": 10_000_000,
            "BAEssentialDownloadAllowance": 2_000_000,
            "BADownloadDomainAllowList": ["assets.example.com", "*.cdn.example.com"],
        ] as [String: Any],
        "BAMaxInstallSize": 20_000_000,
        "BAEssentialMaxInstallSize": 4_000_000,
    ]

    func plist(_ values: [String: Any], format: PropertyListSerialization.PropertyListFormat = .xml) throws -> Data {
        try PropertyListSerialization.data(fromPropertyList: values, format: format, options: 0)
    }

    func problem(_ values: [String: Any], format: PropertyListSerialization.PropertyListFormat = .xml) throws -> String? {
        do {
            _ = try AppConfiguration(infoPlist: try plist(values, format: format))
            return nil
        } catch let error as AppConfigurationError {
            return error.problem
        }
    }

    @Test func readsApplesKeysFromXML() throws {
        let config = try AppConfiguration(infoPlist: try plist(Self.complete))
        #expect(config.appIdentifier == "com.example.levels")
        #expect(config.appGroupIdentifier == "group.com.example.levels")
        #expect(config.manifestURL.absoluteString == "https://assets.example.com/manifest.json")
        #expect(config.initialRestrictions.downloadAllowance == 10_000_000)
        #expect(config.initialRestrictions.essentialDownloadAllowance == 2_000_000)
        #expect(config.initialRestrictions.domainAllowList == ["assets.example.com", "*.cdn.example.com"])
        #expect(config.maxInstallSize == 20_000_000)
        #expect(config.essentialMaxInstallSize == 4_000_000)
    }

    @Test func optionalKeysMayBeAbsent() throws {
        var values = Self.complete
        values["BAEssentialMaxInstallSize"] = nil
        var restrictions = values["BAInitialDownloadRestrictions"] as! [String: Any]
        restrictions["BAEssentialDownloadAllowance"] = nil
        values["BAInitialDownloadRestrictions"] = restrictions
        let config = try AppConfiguration(infoPlist: try plist(values))
        #expect(config.essentialMaxInstallSize == nil)
        #expect(config.initialRestrictions.essentialDownloadAllowance == 0)
    }

    @Test func sharingWithPeersIsOffUnlessTheAppSaysSo() throws {
        #expect(try AppConfiguration(infoPlist: try plist(Self.complete)).sharesWithPeers == false)
        var values = Self.complete
        values["BAHostSharesWithPeers"] = true
        #expect(try AppConfiguration(infoPlist: try plist(values)).sharesWithPeers)
        values["BAHostSharesWithPeers"] = "yes"
        #expect(try problem(values)?.contains("BAHostSharesWithPeers") == true)
    }

    @Test func aMissingKeyIsNamed() throws {
        var values = Self.complete
        values["BAManifestURL"] = nil
        #expect(try problem(values) == "the required key BAManifestURL is missing")
        var nested = Self.complete
        var restrictions = nested["BAInitialDownloadRestrictions"] as! [String: Any]
        restrictions["BADownloadAllowance"] = nil
        nested["BAInitialDownloadRestrictions"] = restrictions
        #expect(try problem(nested) == "the required key BAInitialDownloadRestrictions.BADownloadAllowance is missing")
    }

    /// Found by fuzzing: Foundation's binary parser crashed on a malformed file; every binary one is refused, saying
    /// how to convert it.
    @Test func aBinaryPropertyListIsRefusedWithTheWayOut() throws {
        #expect(try problem(Self.complete, format: .binary)?.contains("convert it to XML") == true)
    }

    /// Found by fuzzing: Foundation's PropertyListDecoder stopped the process on an <integer> with non-digits.
    @Test func aMalformedIntegerIsRefusedNotACrash() throws {
        let xml = String(decoding: try plist(Self.complete), as: UTF8.self)
        #expect(xml.contains("<integer>20000000</integer>"))
        let malformed = xml
            .replacingOccurrences(of: "<integer>20000000</integer>", with: "<integer>20\u{FF}00000</integer>")
        do {
            _ = try AppConfiguration(infoPlist: Data(malformed.utf8))
            Issue.record("a malformed integer was accepted")
        } catch {
            #expect(error.problem.hasPrefix("is not a property list"), "\(error.problem)")
        }
    }

    @Test func aKeyOfTheWrongTypeIsNamed() throws {
        var values = Self.complete
        values["BAMaxInstallSize"] = "big"
        #expect(try problem(values) == "the key BAMaxInstallSize must be an integer")
        var list = Self.complete
        var restrictions = list["BAInitialDownloadRestrictions"] as! [String: Any]
        restrictions["BADownloadDomainAllowList"] = "assets.example.com"
        list["BAInitialDownloadRestrictions"] = restrictions
        #expect(try problem(list)?.hasPrefix("the key BAInitialDownloadRestrictions.BADownloadDomainAllowList") == true)
    }

    @Test func badValuesAreNamed() throws {
        var url = Self.complete
        url["BAManifestURL"] = "ftp://assets.example.com/m"
        #expect(try problem(url) == "BAManifestURL is not an http(s) URL: ftp://assets.example.com/m")
        var negative = Self.complete
        negative["BAMaxInstallSize"] = -1
        #expect(try problem(negative) == "BAMaxInstallSize is negative")
        var domain = Self.complete
        var restrictions = domain["BAInitialDownloadRestrictions"] as! [String: Any]
        restrictions["BADownloadDomainAllowList"] = ["*"]
        domain["BAInitialDownloadRestrictions"] = restrictions
        #expect(try problem(domain) == "BAInitialDownloadRestrictions.BADownloadDomainAllowList has an invalid domain '*'")
    }

    @Test func identifiersThatNameFoldersMustBeReverseDNS() throws {
        for bad in ["../escape", "group/with/slashes", "", ".hidden", "a..b", "grüppe"] {
            var values = Self.complete
            values["BAAppGroupID"] = bad
            #expect(try problem(values)?.hasPrefix("BAAppGroupID must be a reverse-DNS name") == true, "\(bad)")
        }
        var values = Self.complete
        values["CFBundleIdentifier"] = "com.example/../x"
        #expect(try problem(values)?.hasPrefix("CFBundleIdentifier must be a reverse-DNS name") == true)
        // The limit is named, and what the file holds is quoted with its control characters escaped.
        values = Self.complete
        values["BAAppGroupID"] = "group." + String(repeating: "a", count: 195)
        #expect(try problem(values) == "BAAppGroupID is 201 bytes long; the longest accepted is 200")
        values["BAAppGroupID"] = "group.\u{1B}[2J"
        #expect(try problem(values) == #"BAAppGroupID must be a reverse-DNS name (letters, digits, '-', '.'), not "group.\u{1B}[2J""#)
    }

    @Test func notAPropertyListAndUnreadableFilesAreSaidSo() throws {
        #expect(throws: AppConfigurationError.self) { try AppConfiguration(infoPlist: Data("not a plist".utf8)) }
        let missing = URL(fileURLWithPath: "/nonexistent/Info.plist")
        let error = #expect(throws: AppConfigurationError.self) { try AppConfiguration(contentsOf: missing) }
        #expect(error?.file == "/nonexistent/Info.plist")
        #expect(error?.problem.hasPrefix("cannot be read") == true)
    }

    /// An Info.plist is a regular file of at most 1 MiB: one linked to /dev/zero filled the reader's memory, and a
    /// FIFO had it wait forever. A file of its own passes.
    @Test func onlyARegularFileOfBoundedSizeIsRead() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("plist-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        func problem(_ name: String) -> String? {
            do {
                _ = try AppConfiguration(contentsOf: folder.appendingPathComponent(name))
                return nil
            } catch {
                return error.problem
            }
        }
        try plist(Self.complete).write(to: folder.appendingPathComponent("Info.plist"))
        #expect(problem("Info.plist") == nil)
        try FileManager.default.createSymbolicLink(atPath: folder.appendingPathComponent("zero").path, withDestinationPath: "/dev/zero")
        #expect(problem("zero") == "is not a regular file")
        #expect(mkfifo(folder.appendingPathComponent("fifo").path, 0o600) == 0)
        #expect(problem("fifo") == "is not a regular file")
        try Data(count: (1 << 20) + 1).write(to: folder.appendingPathComponent("large"))
        #expect(problem("large") == "is 1048577 bytes; the largest Info.plist read is 1048576")
    }
}
