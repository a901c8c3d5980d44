import Foundation
import HostVocabulary
import ServiceWire

/// Which app a connection's peer is when it runs inside a Flatpak, proved by the sandbox rather than declared: the
/// way xdg-desktop-portal identifies a caller, and tied to the Flatpak instance that Flatpak recorded on the host.
///
/// 1. The peer's PID (`SO_PEERCRED`) names a process that started before the connection was accepted and is the same
///    process (start time) after everything was read: a PID reused meanwhile proves nothing.
/// 2. Its `.flatpak-info` is read through `/proc/PID/root` (the file opened without following a link), a regular
///    file and bounded: Flatpak mounts it read-only at the sandbox's root, where the app cannot write.
/// 3. The instance that file names must be one Flatpak runs on the host: `$XDG_RUNTIME_DIR/.flatpak/INSTANCE`, which
///    no sandbox sees, says the same app, and the peer is in that instance's PID namespace or descends from its
///    first process (`bwrapinfo.json`). A `.flatpak-info` made up elsewhere (a root of one's own in a user
///    namespace) names no such instance. A process of the user outside any sandbox could forge both: it is one
///    protection domain with the user (docs/SERVICE.md, "App identity").
///
/// A process outside any Flatpak is `.native`, and keeps the rule for native apps (`bahost launch` lineage, and the
/// service's own PID namespace).
enum FlatpakPeer: Sendable, Equatable {
    case native
    case flatpak(FlatpakInfo)
    /// It claims to be in a Flatpak, and the claim does not hold; why, in words.
    case refused(String)

    /// [accept thread] Identifies process `pid`, whose connection was accepted at `acceptedAt` (clock ticks since
    /// boot, as `/proc/PID/stat` counts a start time). `runtimeDirectory` is the service's `$XDG_RUNTIME_DIR`, where
    /// Flatpak keeps its instances.
    static func identify(pid: Int32, acceptedAt: UInt64, runtimeDirectory: String?) -> FlatpakPeer {
        guard let before = ProcessStamp(pid: pid) else {
            return .refused("process \(pid) ended before it was identified")
        }
        guard before.startTime <= acceptedAt else {
            return .refused("process \(pid) started after its connection was accepted: the PID was reused")
        }
        // A process that keeps others out of its /proc (not dumpable) shows no sandbox: it is native, and a
        // Flatpak's, in a PID namespace of its own, is then refused by the native rule.
        let root = open("/proc/\(pid)/root", O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard root >= 0 else { return .native }
        defer { close(root) }
        guard !sameFile(root, "/") else { return .native }
        let file = openat(root, ".flatpak-info", O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY)
        guard file >= 0 else { return .native }
        defer { close(file) }
        guard let info = FlatpakInfo.read(file) else {
            return .refused("its /.flatpak-info is not a Flatpak's (no valid [Application] name, or over 64 KiB)")
        }
        guard let instance = info.instance else { return .refused("its /.flatpak-info names no instance") }
        guard let runtimeDirectory else {
            return .refused("the service has no XDG_RUNTIME_DIR, where Flatpak keeps the instance it must check")
        }
        let folder = "\(runtimeDirectory)/.flatpak/\(instance)"
        let recorded = open("\(folder)/info", O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        let hostInfo = recorded >= 0 ? FlatpakInfo.read(recorded) : nil
        if recorded >= 0 { close(recorded) }
        guard let hostInfo, hostInfo.appIdentifier == info.appIdentifier, hostInfo.instance == instance else {
            return .refused("no Flatpak instance \(instance) of \(info.appIdentifier) runs on this host (\(folder))")
        }
        guard inInstance(pid, folder: folder) else {
            return .refused("process \(pid) is not inside Flatpak instance \(instance)")
        }
        guard ProcessStamp(pid: pid) == before else {
            return .refused("process \(pid) ended while it was identified")
        }
        return .flatpak(FlatpakInfo(appIdentifier: info.appIdentifier, instance: instance))
    }

    /// Whether `pid` is in the instance's PID namespace, or descends from its first process.
    private static func inInstance(_ pid: Int32, folder: String) -> Bool {
        guard let data = FileManager.default.contents(atPath: "\(folder)/bwrapinfo.json"), data.count <= 4096,
            let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { return false }
        if let namespace = (object["pid-namespace"] as? NSNumber)?.uint64Value {
            var info = stat()
            if stat("/proc/\(pid)/ns/pid", &info) == 0 && UInt64(info.st_ino) == namespace { return true }
        }
        guard let child = (object["child-pid"] as? NSNumber)?.int32Value, child > 1 else { return false }
        return ProcessStamp.ancestry(of: pid).contains { $0.pid == child }
    }

    private static func sameFile(_ descriptor: Int32, _ path: String) -> Bool {
        var theirs = stat(), ours = stat()
        guard fstat(descriptor, &theirs) == 0, stat(path, &ours) == 0 else { return false }
        return theirs.st_dev == ours.st_dev && theirs.st_ino == ours.st_ino
    }

    /// Now, in clock ticks since boot: the unit of a process's start time.
    static var bootTicks: UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_BOOTTIME, &now)
        let hertz = UInt64(max(1, sysconf(Int32(_SC_CLK_TCK))))
        // Rounded up: a process that started in this tick started before now.
        return UInt64(now.tv_sec) * hertz + (UInt64(now.tv_nsec) * hertz + 999_999_999) / 1_000_000_000
    }
}
