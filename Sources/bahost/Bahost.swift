import ArgumentParser

@main
struct Bahost: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Apple's Background Assets for Linux: runs asset-downloader extensions in time-boxed windows.",
        version: "0.1.0",
        subcommands: [
            Run.self, Resume.self, Daemon.self, Install.self, Update.self, Uninstall.self, Launch.self, Debug.self,
            Pack.self, Serve.self,
        ])
}
