import ArgumentParser
import Foundation
import Vocabulary

/// `bahost new`: starts projects the way Xcode's templates do.
struct New: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "new",
        abstract: "Start a new project from a template.", subcommands: [ExtensionCommand.self])

    struct ExtensionCommand: ParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "extension",
            abstract: "Create a ready extension project in Swift (a package) or C (a Makefile), with its test.",
            discussion: """
                The project has the extension with every entry point stubbed with Apple's documentation, an \
                Info.plist with every key bahost reads, a manifest (or, with --managed, an asset pack), a README, and \
                a test that holds the extension to its runtime budget: `swift test` with BackgroundAssetsTesting, \
                or `make test` with `bahost check`. A C project builds against the installed SDK (pkg-config \
                bahost); a Swift project depends on the bahost package (--bahost-package).
                """)

        @Flag(help: "Write the extension in Swift or in C.")
        var language: Language

        @Argument(help: "The extension's name: ASCII letters and digits, starting with a letter (e.g. LevelsExtension).")
        var name: String

        @Flag(help: "An extension for an app with BAHasManagedAssetPacks (ManagedDownloaderExtension).")
        var managed = false

        @Option(help: "The app's CFBundleIdentifier (default: com.example.<name in lower case>).")
        var appIdentifier: String?

        @Option(help: "Where a Swift project finds the bahost package: a local checkout, or a git URL.")
        var bahostPackage = "https://github.com/bahost/bahost"

        @Option(name: .shortAndLong, help: "The project's folder (default: ./<name>); it must not exist or be empty.")
        var output: String?

        enum Language: String, EnumerableFlag {
            case swift, c
        }

        func validate() throws {
            do { try ExtensionScaffold.validate(name: name) } catch { throw ValidationError(error.description) }
            if let appIdentifier {
                let parts = appIdentifier.split(separator: ".", omittingEmptySubsequences: false)
                guard parts.count >= 2, appIdentifier.count <= 255,
                    parts.allSatisfy({ !$0.isEmpty && $0.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "-") } })
                else {
                    throw ValidationError(
                        "--app-identifier must be a reverse-DNS name (letters, digits, '-', '.'), not '\(appIdentifier.printable())'")
                }
            }
        }

        func run() throws {
            let isURL = bahostPackage.contains("://") || bahostPackage.hasPrefix("git@")
            let package: ExtensionScaffold.PackageLocation =
                isURL ? .url(bahostPackage) : .path(URL(fileURLWithPath: bahostPackage).standardizedFileURL.path)
            let scaffold = ExtensionScaffold(
                name: name, language: language == .swift ? .swift : .c, managed: managed,
                appIdentifier: appIdentifier ?? "com.example.\(name.lowercased())", package: package)
            let folder = URL(fileURLWithPath: output ?? name).standardizedFileURL
            do {
                try scaffold.write(to: folder)
            } catch let error as ScaffoldError {
                throw ValidationError(error.description)
            }
            print("created \(folder.path):")
            for file in scaffold.files().map(\.path).sorted() { print("  \(file)") }
            print(language == .swift ? "next: cd \(folder.path) && swift build && swift test" : "next: cd \(folder.path) && make && make test")
        }
    }
}
