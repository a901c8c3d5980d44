import HostVocabulary
import Policy
import Testing
import Vocabulary

@Suite struct DomainAllowListTests {
    let list = DomainAllowList(["assets.example.com", "*.cdn.example.net", "Bücher.example", "127.0.0.1"])

    @Test func exactNamesWildcardsAndAddresses() {
        #expect(list.permits("https://assets.example.com/a.pack"))
        #expect(list.permits("https://eu.cdn.example.net/a"))
        #expect(list.permits("https://a.b.cdn.example.net/a"))
        #expect(list.permits("http://127.0.0.1:8080/a"))
        // A wildcard names subdomains, not the domain itself.
        #expect(!list.permits("https://cdn.example.net/a"))
        #expect(!list.permits("https://other.example.com/a"))
    }

    @Test func resistsTheUsualTricks() {
        #expect(!list.permits("https://assets.example.com.evil.net/a"))
        #expect(!list.permits("https://assets.example.com@evil.net/a"))
        #expect(!list.permits("https://evil.net/assets.example.com"))
        #expect(!list.permits("https://evilcdn.example.net/a"))
        #expect(!list.permits("https://cdn.example.net.evil.net/a"))
        // A Cyrillic "а" in place of the Latin one is another name.
        #expect(!list.permits("https://аssets.example.com/a"))
        #expect(!list.permits("not a url"))
    }

    @Test func caseTrailingDotsAndIDNCompareAsDNSDoes() {
        #expect(list.permits("https://ASSETS.Example.COM/a"))
        #expect(list.permits("https://assets.example.com./a"))
        #expect(list.permits("https://EU.CDN.example.net./a"))
        #expect(list.permits("https://bücher.example/a"))
        #expect(list.permits("https://xn--bcher-kva.example/a"))
        #expect(DomainAllowList(["xn--bcher-kva.example"]).permits("https://BÜCHER.example/a"))
    }

    @Test func aListParsedBeforeIsTheListOfItsPatterns() {
        let patterns = ["parsed-once.example", "*.cdn.parsed-once.example"]
        #expect(DomainAllowList.parsed(patterns) == DomainAllowList(patterns))
        #expect(DomainAllowList.parsed(patterns).permits("https://eu.cdn.parsed-once.example/a"))
        // An app updated with other patterns gets its new list, not the one parsed before.
        let updated = DomainAllowList.parsed(["other.example"])
        #expect(!updated.permits("https://parsed-once.example/a") && updated.permits("https://other.example/a"))
        // More lists than it keeps: each is still its own.
        for index in 0..<100 {
            #expect(DomainAllowList.parsed(["host\(index).example"]).permits("https://host\(index).example/a"))
        }
        #expect(DomainAllowList.parsed(patterns) == DomainAllowList(patterns))
    }
}

@Suite struct AllowanceTests {
    func download(_ size: Int64, essential: Bool = false) -> Download {
        Download(identifier: "d\(size)", url: "https://a.example.com/x", applicationGroupIdentifier: "g", fileSize: size, isEssential: essential)
    }

    @Test func declaredSizesCountAndWhatDoesNotFitIs112() {
        var allowance = Allowance(restricted: true, downloadAllowance: 1000, essentialDownloadAllowance: 500)
        #expect(allowance.admit(download(600)) == nil)
        #expect(allowance.admit(download(400)) == nil)
        #expect(allowance.admit(download(1))?.code == 112)
        #expect(allowance.usedBytes == 1000)
        // Essential downloads have their own allowance.
        #expect(allowance.admit(download(500, essential: true)) == nil)
        #expect(allowance.admit(download(1, essential: true))?.code == 112)
        #expect(allowance.extensionInfo == AppExtensionInfo(restrictedDownloadSizeRemaining: 0, restrictedEssentialDownloadSizeRemaining: 0))
    }

    @Test func unknownSizesWaitForBytesAndAreRefusedWith203WhenNothingIsLeft() {
        var allowance = Allowance(restricted: true, downloadAllowance: 100, essentialDownloadAllowance: 0)
        #expect(allowance.admit(download(0)) == nil)
        #expect(allowance.unreservedBytesLeft(essential: false) == 100)
        allowance.charge(100, essential: false)
        #expect(allowance.admit(download(0))?.code == 203)
        #expect(allowance.refusalToStart("the manifest", essential: false)?.code == 203)
        #expect(Allowance.exceeded("the manifest", limit: 100).code == 204)
    }

    @Test func nothingIsRestrictedOnceTheAppHasLaunched() {
        var allowance = Allowance(restricted: false, downloadAllowance: 0, essentialDownloadAllowance: 0)
        #expect(allowance.admit(download(1 << 40)) == nil)
        #expect(allowance.unreservedBytesLeft(essential: false) == nil)
        #expect(allowance.extensionInfo == .unrestricted)
    }

    @Test func appPolicyChecksTheAllowListOnlyWhileRestricted() {
        let rules = DownloadRules(appGroupIdentifier: "g", allowInsecureLoopback: false)
        var policy = AppPolicy(
            rules: rules, allowList: DomainAllowList(["a.example.com"]),
            allowance: Allowance(restricted: true, downloadAllowance: 100, essentialDownloadAllowance: 0))
        var elsewhere = download(10)
        elsewhere.url = "https://b.example.com/x"
        #expect(policy.admit(elsewhere, for: .install)?.code == 202)
        #expect(policy.checkURL("https://b.example.com/redirected")?.code == 202)
        #expect(policy.checkURL("http://a.example.com/x")?.code == 0)
        policy.allowance.restricted = false
        #expect(policy.admit(elsewhere, for: .install) == nil)
    }
}
