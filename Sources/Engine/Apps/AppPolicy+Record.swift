import ExtensionRuntime
import HostVocabulary
import Policy
import Queue
import Transfer
import Vocabulary

extension AppRecord {
    /// The app's policy as its record stands now.
    var policy: AppPolicy {
        AppPolicy(
            rules: DownloadRules(appGroupIdentifier: appGroupIdentifier, allowInsecureLoopback: allowInsecureLoopback),
            allowList: .parsed(domainAllowList),
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

extension QueueStore {
    /// Charges an app's allowance `bytes` a download received beyond its declared size (the allowance reserved that
    /// size), when the allowance restricts the app.
    func charge(_ appIdentifier: String, bytes: Int64, essential: Bool) throws {
        try updateApp(appIdentifier) { app in
            var policy = app.policy
            guard policy.allowance.restricted else { return }
            policy.allowance.charge(bytes, essential: essential)
            app.take(policy)
        }
    }
}
