import ExtensionRuntime
import Policy
import Queue
import Transfer

extension AppRecord {
    /// The app's policy as its record stands now.
    var policy: AppPolicy {
        AppPolicy(
            rules: DownloadRules(appGroupIdentifier: appGroupIdentifier, allowInsecureLoopback: allowInsecureLoopback),
            allowList: DomainAllowList(domainAllowList),
            allowance: Allowance(
                restricted: !launched, downloadAllowance: downloadAllowance,
                essentialDownloadAllowance: essentialDownloadAllowance, usedBytes: usedBytes,
                usedEssentialBytes: usedEssentialBytes))
    }

    /// Stores what `policy` counted against the allowances.
    mutating func take(_ policy: AppPolicy) {
        usedBytes = policy.allowance.usedBytes
        usedEssentialBytes = policy.allowance.usedEssentialBytes
    }
}

extension HostError {
    init(_ error: TransferError) {
        self.init(code: error.code, domain: error.domain, message: error.message)
    }
}

extension TransferError {
    /// A policy refusal met during a transfer (a redirect hop): permanent.
    init(refusal: HostError) {
        self.init(.permanent, code: refusal.code, domain: refusal.domain, message: refusal.message)
    }
}
