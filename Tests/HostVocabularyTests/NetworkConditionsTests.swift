import HostVocabulary
import Testing
import Vocabulary

/// Which downloads the machine's network conditions hold back (docs/DOWNLOADS.md, "Metered networks"): a value,
/// judged without a bus.
@Suite struct NetworkConditionsTests {
    let background = NetworkUse(discretionary: true, access: [], host: "cdn.example.com")
    let essential = NetworkUse(discretionary: false, access: [], host: "cdn.example.com")

    @Test func withoutNetworkManagerNothingIsHeld() {
        let unknown = NetworkConditions()
        #expect(!unknown.holdsAny)
        #expect(unknown.hold(background) == nil && unknown.hold(essential) == nil)
    }

    @Test func aMeteredNetworkHoldsBackgroundDownloadsAndWhatAvoidsIt() {
        for metered in [NetworkConditions.Metered.yes, .guessYes] {
            let conditions = NetworkConditions(metered: metered)
            #expect(conditions.isExpensive && conditions.holdsAny)
            #expect(conditions.hold(background) == .meteredBackground)
            #expect(conditions.hold(essential) == nil)
            var avoiding = essential
            avoiding.access = [.avoidsExpensive]
            #expect(conditions.hold(avoiding) == .expensive)
        }
        for metered in [NetworkConditions.Metered.no, .guessNo, .unknown] {
            #expect(NetworkConditions(metered: metered).hold(background) == nil)
        }
    }

    /// Constrained is a connection the user marked metered (`yes`), not one NetworkManager guessed.
    @Test func constrainedIsWhatTheUserMarkedMetered() {
        var avoiding = essential
        avoiding.access = [.avoidsConstrained]
        #expect(NetworkConditions(metered: .yes).hold(avoiding) == .constrained)
        #expect(NetworkConditions(metered: .guessYes).hold(avoiding) == nil)
    }

    @Test func noConnectivityHoldsEverythingButLoopbackAndSleepHoldsEverything() {
        for connectivity in [NetworkConditions.Connectivity.none, .portal, .limited] {
            let conditions = NetworkConditions(connectivity: connectivity)
            #expect(conditions.hold(essential) == .noConnectivity(connectivity))
            #expect(conditions.hold(NetworkUse(discretionary: true, access: [], host: "127.0.0.1")) == nil)
        }
        #expect(NetworkConditions(connectivity: .full).hold(background) == nil)
        let asleep = NetworkConditions(asleep: true)
        #expect(asleep.hold(NetworkUse(discretionary: false, access: [], host: "localhost")) == .asleep)
    }

    @Test func theABIsBitsAreKeptAndUnknownOnesDropped() {
        #expect(NetworkAccess(rawValue: 3) == [.avoidsExpensive, .avoidsConstrained])
        #expect(NetworkAccess(rawValue: 0xFF).rawValue == 3)
    }
}
