import Foundation
import FuzzTargets
import Testing
import TestSupport

/// The fuzz targets' corpus, replayed in every test run: each target's seeds are what its parser accepts (so they
/// reach deep), and every input kept in `Fuzz/Corpus` and every finding in `Fuzz/Findings` (a crash the fuzzer
/// found, kept as a regression test once fixed) goes through its parser without a crash.
@Suite(.ownThreads) struct FuzzRegressionTests {
    @Test(arguments: FuzzTarget.allCases)
    func seedsAreAcceptedAndTheCorpusReplays(_ target: FuzzTarget) throws {
        #expect(!target.seeds.isEmpty)
        for (name, data) in target.seeds { #expect(target.run(data), "seed \(name) is refused") }
        var replayed = 0
        for folder in ["Fuzz/Corpus", "Fuzz/Findings"] {
            let root = TestPlugins.packageRoot.appendingPathComponent("\(folder)/\(target.rawValue)")
            for file in (try? FileManager.default.contentsOfDirectory(atPath: root.path)) ?? [] {
                target.run(try Data(contentsOf: root.appendingPathComponent(file)))
                replayed += 1
            }
        }
        #expect(replayed >= target.seeds.count, "Fuzz/Corpus/\(target.rawValue) lacks its seeds")
    }
}
