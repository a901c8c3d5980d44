import ArgumentParser
import Foundation
import ServiceWire

/// `bahost install APP_DIR`.
struct Install: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "Install an app with the service and run its install life cycle.",
        discussion: """
            APP_DIR holds the app's Info.plist and its extension (the .so named by BAHostExtension, or the one .so \
            in the folder). The service fetches the manifest, runs the extension's install content request, and \
            this command waits until the essential downloads are done; the others go on in the background. \
            Exit status: 0 installed with every essential download; 2 the content request or an essential \
            download failed; 69 the service is not running.
            """)

    @Argument(help: "The app's folder.") var appDirectory: String
    @OptionGroup var service: ServiceOptions

    func run() throws {
        try service.run(.install(appDirectory: URL(fileURLWithPath: appDirectory).standardizedFileURL.path))
    }
}

/// `bahost update APP_DIR`.
struct Update: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Update an installed app from its folder and run its update life cycle.",
        discussion: "As install, with the update content request; what the app used of its allowances is kept.")

    @Argument(help: "The app's folder.") var appDirectory: String
    @OptionGroup var service: ServiceOptions

    func run() throws {
        try service.run(.update(appDirectory: URL(fileURLWithPath: appDirectory).standardizedFileURL.path))
    }
}

/// `bahost uninstall APP_ID`.
struct Uninstall: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "uninstall",
        abstract: "Remove an app: its downloads, partial files and, unless another app shares it, its container.")

    @Argument(help: "The app's CFBundleIdentifier.") var appIdentifier: String
    @OptionGroup var service: ServiceOptions

    func run() throws { try service.run(.uninstall(appIdentifier: appIdentifier)) }
}

/// `bahost launch APP_ID [-- COMMAND…]`.
struct Launch: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "launch",
        abstract: "Launch an app: wait for its essential downloads, mark it launched, and run it.",
        discussion: """
            Blocks until the app's essential downloads have finished or failed (saying which failed and why), \
            then marks the app launched, which lifts its initial download restrictions and starts its periodic \
            content requests. With a COMMAND, then runs it in this process (exec) with BAHOST_APP_IDENTIFIER \
            set: the service recorded this process as the app, so the app's BADownloadManager (and that of any \
            process it starts) is accepted as this app, which no other process is. Exits with the app's status. \
            Without a COMMAND, exits 0, or 2 when an essential download failed.
            """)

    @Argument(help: "The app's CFBundleIdentifier.") var appIdentifier: String
    @OptionGroup var service: ServiceOptions
    @Argument(parsing: .postTerminator, help: "The app's command line, after --.") var command: [String] = []

    func run() throws {
        let report = try service.send(.launch(appIdentifier: appIdentifier))
        guard let executable = command.first else {
            if !report.success { throw ExitCode(2) }
            return
        }
        setenv("BAHOST_APP_IDENTIFIER", appIdentifier, 1)
        if let socket = service.socket { setenv("BAHOST_SOCKET", socket, 1) }
        // The app gets the signal mask a shell would give it: this process's runtime blocks signals on its threads,
        // and exec keeps the mask, which left a C app deaf to SIGTERM and Ctrl-C.
        var nothing = sigset_t()
        sigemptyset(&nothing)
        sigprocmask(SIG_SETMASK, &nothing, nil)
        let arguments = command.map { strdup($0) } + [nil]
        execvp(executable, arguments)
        Output.standardError("bahost: cannot run \(executable): \(String(cString: strerror(errno)))\n")
        throw ExitCode(127)
    }
}
