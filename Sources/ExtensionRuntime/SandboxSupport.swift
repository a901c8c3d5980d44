import CHostSupport
import Foundation

/// What this machine's kernel lets bahost's sandbox do, probed once: the service says it at start and in
/// `bahost debug status`, and runs anyway with what it has. Each window's report says what was applied to it.
public struct SandboxSupport: Sendable {
    /// `BAHOST_SANDBOX=off` (`--sandbox off`): nothing is restricted.
    public let off: Bool
    /// A window can be a PID namespace of its own (user namespaces allowed), so that nothing outlives it.
    public let pidNamespaces: Bool
    /// Why not, when not.
    public let pidNamespaceError: String?
    /// The Landlock ABI the kernel offers (files from 1; signals and abstract sockets from 6), nil without Landlock.
    public let landlockABI: Int?
    /// Whether each window gets a cgroup of its own (memory and processes limited for the window as a whole).
    public let windowCgroups: Bool
    /// How a window's memory and processes are held together, in a sentence (`WindowCgroup`).
    public let containment: String

    /// Probes the running kernel (it starts and reaps one short-lived process).
    public static func probe() -> SandboxSupport {
        let off = ProcessInfo.processInfo.environment["BAHOST_SANDBOX"] == "off"
        let namespaces = bahost_user_namespaces()
        let abi = bahost_landlock_abi()
        let cgroups: Bool
        if case .none = WindowCgroup.support { cgroups = false } else { cgroups = true }
        return SandboxSupport(
            off: off, pidNamespaces: namespaces == 0,
            pidNamespaceError: namespaces == 0 ? nil : String(cString: strerror(namespaces)),
            landlockABI: abi > 0 ? Int(abi) : nil, windowCgroups: cgroups, containment: WindowCgroup.summary)
    }

    /// Each protection the machine cannot give, as a sentence; empty when it gives them all.
    public var missing: [String] {
        if off { return ["the sandbox is OFF (--sandbox off): extensions run with every right of the user"] }
        var missing: [String] = []
        if !pidNamespaces {
            missing.append(
                "no user namespaces (\(pidNamespaceError ?? "refused")): a process an extension starts can outlive "
                    + "its window, and the process limit does not apply")
        }
        if !windowCgroups && getuid() == 0 {
            missing.append(
                "running as root without a cgroup for each window: Linux exempts root from the process limit, so a "
                    + "window's processes are not limited in number (\(containment))")
        }
        switch landlockABI {
        case nil: missing.append("no Landlock: extensions can read and write every file the user can")
        case let abi? where abi < 6:
            missing.append("Landlock ABI \(abi) < 6: extensions can signal the user's processes and reach abstract sockets")
        default: break
        }
        return missing
    }

    /// One line: what each window gets.
    public var summary: String {
        if off { return "OFF (--sandbox off)" }
        let processes = pidNamespaces ? "PID namespace" : "no PID namespace"
        let files = landlockABI.map { "Landlock ABI \($0)" } ?? "no Landlock"
        return "\(processes), \(files), limits, no new privileges" + (missing.isEmpty ? "" : " (incomplete)")
    }
}
