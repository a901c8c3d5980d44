import Foundation
import FuzzTargets

// One program for every target. Built for fuzzing (`Fuzz/run.sh`: -sanitize=fuzzer,address -DFUZZING), libFuzzer
// drives it and BAHOST_FUZZ_TARGET names the target; built normally, it replays files through a target
// (`bahost-fuzz TARGET FILE…`), which is how a finding is reproduced.

#if FUZZING
private let target: FuzzTarget = {
    let name = ProcessInfo.processInfo.environment["BAHOST_FUZZ_TARGET"] ?? ""
    guard let target = FuzzTarget(rawValue: name) else {
        let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: ", ")
        FileHandle.standardError.write(Data("set BAHOST_FUZZ_TARGET to one of: \(names)\n".utf8))
        exit(64)
    }
    return target
}()

@_cdecl("LLVMFuzzerTestOneInput")
public func fuzzOneInput(_ bytes: UnsafePointer<UInt8>?, _ count: Int) -> CInt {
    target.run(bytes.map { Data(bytes: $0, count: count) } ?? Data())
    return 0
}

/// libFuzzer's driver, entered from our own main: SwiftPM gives an executable's main a name of its own, so
/// libFuzzer's `main` cannot be the program's.
@_silgen_name("LLVMFuzzerRunDriver")
private func runDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt
) -> CInt

@main
enum Fuzz {
    static func main() {
        _ = target  // says which targets there are, and stops, when none is named
        var argc = CommandLine.argc
        var argv = CommandLine.unsafeArgv
        exit(runDriver(&argc, &argv) { bytes, count in fuzzOneInput(bytes, count) })
    }
}
#else
@main
enum Replay {
    static func main() {
        let arguments = CommandLine.arguments.dropFirst()
        if arguments.first == "--write-seeds", arguments.count == 2 {
            let root = URL(fileURLWithPath: arguments.last!)
            for target in FuzzTarget.allCases {
                let folder = root.appendingPathComponent(target.rawValue)
                try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                for (name, data) in target.seeds {
                    _ = FileManager.default.createFile(atPath: folder.appendingPathComponent("seed-\(name)").path, contents: data)
                }
                print("\(target.rawValue): \(target.seeds.count) seeds")
            }
            return
        }
        guard let name = arguments.first, let target = FuzzTarget(rawValue: name), arguments.count > 1 else {
            let names = FuzzTarget.allCases.map(\.rawValue).joined(separator: "|")
            print("usage: bahost-fuzz \(names) FILE…   replays each file through the target's parser")
            print("       bahost-fuzz --write-seeds FOLDER   writes each target's seed inputs into FOLDER/TARGET/")
            exit(64)
        }
        for path in arguments.dropFirst() {
            guard let data = FileManager.default.contents(atPath: path) else {
                print("cannot read \(path)")
                exit(66)
            }
            target.run(data)
            print("\(path): parsed or refused, no crash")
        }
    }
}
#endif
