import Foundation
import Synchronization

/// The extensions tests load: the C ones compiled with plain `cc -shared -fPIC`, the way an extension author builds
/// them; the Swift example as SwiftPM built it beside the test bundle.
public enum TestPlugins {
    /// The package's root folder.
    public static let packageRoot = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        .deletingLastPathComponent().deletingLastPathComponent()

    /// Where the package's programs and the Swift example extension are built: beside the running test bundle.
    public static let buildFolder = URL(fileURLWithPath: "/proc/self/exe").resolvingSymlinksInPath()
        .deletingLastPathComponent()

    public static var swiftExample: String { buildFolder.appendingPathComponent("libExampleExtension.so").path }
    public static var bahost: String { buildFolder.appendingPathComponent("bahost").path }

    /// Compiles `Plugins/C/<relativePath>.c` once per test process and returns the shared object's path.
    public static func c(_ relativePath: String) throws -> String {
        try built.withLock { built in
            if let path = built[relativePath] { return path }
            let source = packageRoot.appendingPathComponent("Plugins/C/\(relativePath).c").path
            let output = scratch.appendingPathComponent(relativePath.replacingOccurrences(of: "/", with: "_") + ".so")
                .path
            try compile(source, to: output, ["-shared", "-fPIC"])
            built[relativePath] = output
            return output
        }
    }

    /// Compiles `Plugins/C/<relativePath>.c` once per test process into a program linked with the app's C library
    /// (`libbackgroundassets.so`, built beside the test bundle), and returns its path. `linked: false` leaves the
    /// library out, for a program that loads it itself with `dlopen`.
    public static func cApp(_ relativePath: String, linked: Bool = true) throws -> String {
        try built.withLock { built in
            let key = "program:\(relativePath)"
            if let path = built[key] { return path }
            let source = packageRoot.appendingPathComponent("Plugins/C/\(relativePath).c").path
            let output = scratch.appendingPathComponent(relativePath.replacingOccurrences(of: "/", with: "_")).path
            // The library's SONAME is its installed name; SwiftPM names the file without the version.
            let library = buildFolder.appendingPathComponent("libbackgroundassets.so").path
            let versioned = scratch.appendingPathComponent("libbackgroundassets.so.1").path
            if !FileManager.default.fileExists(atPath: versioned) {
                try FileManager.default.createSymbolicLink(atPath: versioned, withDestinationPath: library)
            }
            try compile(
                source, to: output, linked ? ["-L", buildFolder.path, "-lbackgroundassets", "-Wl,-rpath,\(scratch.path)"] : [])
            built[key] = output
            return output
        }
    }

    /// `cc` with the warnings as errors and the SDK's headers, as an author builds against them.
    private static func compile(_ source: String, to output: String, _ flags: [String]) throws {
        let cc = Process()
        cc.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        cc.arguments = ["cc", "-Wall", "-Wextra", "-Werror", "-I", packageRoot.appendingPathComponent("SDK/C/include").path,
                        "-o", output, source] + flags
        try cc.run()
        cc.waitUntilExit()
        guard cc.terminationStatus == 0 else { throw CompileError(source: source) }
    }

    /// A scratch folder of this test process, removed when the process exits: a run leaves about a gigabyte there
    /// (servers' files, data roots, packs), which runs one after another would pile up in /tmp.
    /// `BAHOST_TEST_KEEP=1` keeps it, for a failure's daemon logs and data roots.
    public static let scratch: URL = {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("bahost-tests-\(getpid())")
        try? FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        if ProcessInfo.processInfo.environment["BAHOST_TEST_KEEP"] != "1" {
            atexit { try? FileManager.default.removeItem(at: TestPlugins.scratch) }
        }
        return url
    }()

    /// A fresh, empty folder in the scratch folder, named `prefix-UUID`.
    public static func freshFolder(_ prefix: String) -> URL {
        let url = scratch.appendingPathComponent("\(prefix)-\(UUID().uuidString)")
        try! FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A fresh file in the scratch folder holding `contents`.
    public static func file(_ contents: String, name: String = "file") throws -> String {
        let path = scratch.appendingPathComponent("\(UUID().uuidString)-\(name)").path
        try contents.write(toFile: path, atomically: true, encoding: .utf8)
        return path
    }

    private static let built = Mutex<[String: String]>([:])

    public struct CompileError: Error, CustomStringConvertible {
        public let source: String
        public var description: String { "cc failed on \(source)" }
    }
}
