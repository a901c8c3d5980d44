import ArgumentParser
import Vocabulary

/// Every command names itself (`commandName`): ArgumentParser derives a missing name from the type's name through
/// reflection, for every command in the tree at every start (docs/performance/DECISIONS.md #18).
@main
struct Bahost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bahost",
        abstract: "Apple's Background Assets for Linux: runs asset-downloader extensions in time-boxed windows.",
        version: BahostVersion.release,
        subcommands: [
            Run.self, Resume.self, Daemon.self, Install.self, Update.self, Uninstall.self, Launch.self, Debug.self,
            Settings.self, Peers.self, Pack.self, Serve.self, Check.self, New.self,
        ])
}
