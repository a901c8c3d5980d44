import ArgumentParser
import Foundation
import HostVocabulary
import Peers
import PersonSettings

/// `bahost peers`: the person's machines that share packs with each other (docs/PEERS.md). Pairing makes a
/// household's authority once, on the first machine, and carries it to each other machine as a code; each machine
/// then holds a certificate the authority signed, which admits it to the household's swarms ("peers.share own").
/// The files are the person's: nothing here needs the service, which takes a change of them at once.
struct Peers: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "Pair this machine with your other machines, and see whom it shares packs with.",
        discussion: """
            Machines on one network can share the asset packs of apps that allow it (BAHostSharesWithPeers), each \
            piece checked against the app's download manifest. Whom with is the setting peers.share: off, own (your \
            paired machines, the default) or any (any bahost on the network). See docs/PEERS.md.
            """,
        subcommands: [Show.self, Pair.self, Unpair.self], defaultSubcommand: Show.self)

    static var settingsFile: SettingsFile { SettingsFile.standard() }
    static var pairingFile: PairingFile { PairingFile(beside: settingsFile) }

    /// The code that carries a household's authority to another machine: its certificate and key, in base64.
    static let codePrefix = "bahost-household:"
    /// The longest code read: a P-256 authority's is about 1.3 KB.
    static let longestCode = 16 * 1024

    struct Show: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show", abstract: "Whom this machine shares with, and the household it is paired with.")
        @Flag(help: "Print one JSON object.") var json = false

        func run() throws {
            let mode = (try? Peers.settingsFile.read().peers) ?? PersonSettings.defaults.peers
            let contents: PairingFile.Contents?
            do throws(SettingError) { contents = try Peers.pairingFile.read() } catch {
                Output.standardError("bahost: \(error)\n")
                throw ExitCode(2)
            }
            let household = contents.flatMap { Pairing.fingerprint($0.pairing.authority) }
            if json {
                var object: [String: Any] = ["share": mode.rawValue, "pairingFile": Peers.pairingFile.path]
                if let household { object["household"] = household }
                ServiceOptions.output(Peers.jsonLine(object))
                return
            }
            var text = "peers.share = \(mode.rawValue)\n"
            switch (mode, household) {
            case (.off, _): text += "this machine shares with nobody\n"
            case (.any, _): text += "this machine shares with any bahost on the network\n"
            case (.own, nil): text += "this machine is not paired, so it shares with nobody: bahost peers pair\n"
            case (.own, let household?): text += "this machine shares with the machines of household \(household)\n"
            }
            if let household, mode != .own { text += "paired with household \(household)\n" }
            ServiceOptions.output(text)
        }
    }

    struct Pair: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "pair", abstract: "Make a household on this machine, or join one from another machine's code.",
            discussion: """
                Without a code: pairs this machine with a new household (or, when it is paired, keeps it) and prints \
                the household's code. On each of your other machines, run bahost peers pair CODE. The code holds the \
                household's key: whoever has it can pair a machine, so carry it as you would a password. \
                bahost peers unpair leaves the household.
                """)
        @Argument(help: "The code another machine's bahost peers pair printed; - reads it from standard input.")
        var code: String?
        @Flag(help: "Leave the household this machine is paired with, for the code's.") var replace = false
        @Flag(help: "Print one JSON object.") var json = false

        func run() throws {
            do {
                let file = Peers.pairingFile
                let current = try file.read()
                let authority: Pairing.Issued
                if let code {
                    authority = try Peers.authority(fromCode: code == "-" ? readAll() : code)
                    if let current, current.pairing.authority != authority.certificate, !replace {
                        let household = Pairing.fingerprint(current.pairing.authority) ?? "?"
                        throw ValidationError(
                            "this machine is paired with household \(household); --replace leaves it for the code's")
                    }
                } else if let current {
                    authority = Pairing.Issued(certificate: current.pairing.authority, key: current.authorityKey)
                } else {
                    authority = try Pairing.makeAuthority(name: "bahost household")
                }
                if current?.pairing.authority != authority.certificate || current == nil {
                    let machine = try Pairing.certify(authority: authority, name: Peers.machineName)
                    try file.write(PairingFile.Contents(
                        pairing: PeerPairing(
                            authority: authority.certificate, certificate: machine.certificate, key: machine.key),
                        authorityKey: authority.key))
                }
                let household = Pairing.fingerprint(authority.certificate) ?? "?"
                let code = Peers.codePrefix
                    + Data((authority.certificate + authority.key).utf8).base64EncodedString()
                let mode = (try? Peers.settingsFile.read().peers) ?? PersonSettings.defaults.peers
                if json {
                    ServiceOptions.output(Peers.jsonLine([
                        "household": household, "code": code, "pairingFile": file.path, "share": mode.rawValue,
                    ]))
                    return
                }
                var text = "paired with household \(household)\n"
                text += "on each of your other machines, run:\n\n    bahost peers pair \(code)\n\n"
                text += "the code holds the household's key: carry it as you would a password\n"
                if mode != .own { text += "peers.share is \(mode.rawValue): bahost settings set peers.share own\n" }
                ServiceOptions.output(text)
            } catch let error as ValidationError {
                Output.standardError("bahost: \(error.message)\n")
                throw ExitCode(2)
            } catch {
                Output.standardError("bahost: \(error)\n")
                throw ExitCode(2)
            }
        }

        private func readAll() -> String {
            let data = FileHandle.standardInput.readData(ofLength: Peers.longestCode + 1)
            return String(decoding: data, as: UTF8.self)
        }
    }

    struct Unpair: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "unpair", abstract: "Leave the household: this machine shares with none of its machines.")
        @Flag(help: "Print one JSON object.") var json = false

        func run() throws {
            let removed = Peers.pairingFile.remove()
            ServiceOptions.output(
                json ? Peers.jsonLine(["unpaired": removed]) : removed ? "unpaired\n" : "this machine was not paired\n")
        }
    }

    /// The authority a code carries; throws what is wrong with it, never printing it (it holds a key).
    static func authority(fromCode raw: String) throws -> Pairing.Issued {
        let code = String(raw.unicodeScalars.filter { !$0.properties.isWhitespace })
        guard code.utf8.count <= longestCode else {
            throw ValidationError("the code is over \(longestCode) bytes: it is not one bahost peers pair printed")
        }
        guard code.hasPrefix(codePrefix), let data = Data(base64Encoded: String(code.dropFirst(codePrefix.count)))
        else { throw ValidationError("that is not a code bahost peers pair printed (it starts with \(codePrefix))") }
        let blocks = PairingFile.pemBlocks(String(decoding: data, as: UTF8.self))
        guard blocks.count == 2, blocks[0].kind == "CERTIFICATE", blocks[1].kind.hasSuffix("PRIVATE KEY") else {
            throw ValidationError("the code does not hold a household's certificate and key: copy it whole")
        }
        return Pairing.Issued(certificate: blocks[0].text, key: blocks[1].text)
    }

    /// This machine's name in its certificate: its host name.
    static var machineName: String {
        var name = [CChar](repeating: 0, count: 256)
        gethostname(&name, name.count - 1)
        let text = String(decoding: name.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return text.isEmpty ? "bahost machine" : text
    }

    static func jsonLine(_ object: [String: Any]) -> String {
        let data = (try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys])) ?? Data()
        return String(decoding: data, as: UTF8.self)
    }
}
