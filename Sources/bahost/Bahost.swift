import ArgumentParser
import Vocabulary

@main
struct Bahost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apple's Background Assets for Linux: runs asset-downloader extensions in time-boxed windows.",
        version: BahostVersion.release,
        subcommands: [
            Run.self, Resume.self, Daemon.self, Install.self, Update.self, Uninstall.self, Launch.self, Debug.self,
            Pack.self, Serve.self, Check.self, New.self,
        ])
}
