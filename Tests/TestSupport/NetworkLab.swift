import Foundation

/// A network built the way a laptop meets one, in network namespaces of its own (root only): a client namespace,
/// where the program under test runs (`command`), and a server namespace with a real nginx serving https as
/// `NetworkLab.host` at `serviceAddress`. Two links join them, `c0`–`s0` (10.77.1.0/24) and `c1`–`s1`
/// (10.77.2.0/24); the client reaches the service through `c0` until `switchRoute` moves it to `c1`. The addresses
/// are the namespaces' own: nothing leaves them. `close` (or the end of the test process, through a watchdog) removes
/// the namespaces and what runs in them.
public final class NetworkLab: @unchecked Sendable {
    /// The name the service's certificate carries; the client namespace resolves it (`/etc/netns/NAME/hosts`).
    public static let host = "assets.lab.test"
    public static let serviceAddress = "10.77.9.1"
    public static let ip = FileManager.default.isExecutableFile(atPath: "/usr/sbin/ip") ? "/usr/sbin/ip" : "/sbin/ip"

    /// Why labs cannot be built on this machine, or nil when they can: the tests that need one are skipped with it.
    public static let unavailable: String? = {
        guard getuid() == 0 else { return "network namespaces need root (CI runs the tests as root)" }
        guard FileManager.default.isExecutableFile(atPath: ip) else { return "iproute2's ip is not installed" }
        let probe = "bahost-probe-\(getpid())"
        guard (try? run(ip, ["netns", "add", probe])) != nil else { return "this machine refuses network namespaces" }
        _ = try? run(ip, ["netns", "del", probe])
        return nil
    }()

    public let client: String
    public let server: String
    /// The router namespace `addBottleneck` adds.
    public let router: String
    public let folder: URL
    public let root: URL
    public let caFile: String
    public let accessLog: String
    /// The watchdog's stdin: it cleans up once this end closes (the lab gone, or the test process).
    private let lifeline = Pipe()

    /// Builds the namespaces and links, and starts nginx in the server's, serving `root` with `rate` (nginx's
    /// `limit_rate`, bytes a second a connection; nil for none) on `/slow/`.
    public init(rate: String = "1m") throws {
        let id = String(UUID().uuidString.prefix(8)).lowercased()
        client = "bahost-\(id)-c"
        server = "bahost-\(id)-s"
        router = "bahost-\(id)-r"
        folder = TestPlugins.scratch.appendingPathComponent("lab-\(id)")
        root = folder.appendingPathComponent("www")
        for sub in ["www/slow", "logs", "tmp"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        accessLog = folder.appendingPathComponent("logs/access.log").path
        let tls = try TestCertificates(in: folder, names: [Self.host])
        caFile = tls.caFile
        try build()
        try startNginx(tls, rate: rate)
    }

    deinit { close() }

    private func build() throws {
        let netns = "/etc/netns/\(client)"
        for namespace in [client, server] {
            try FileManager.default.createDirectory(atPath: "/etc/netns/\(namespace)", withIntermediateDirectories: true)
            try "127.0.0.1 localhost\n\(Self.serviceAddress) \(Self.host)\n".write(
                toFile: "/etc/netns/\(namespace)/hosts", atomically: true, encoding: .utf8)
        }
        // A watchdog removes the namespaces when the test process is gone, however it ended.
        let watchdog = Process()
        watchdog.executableURL = URL(fileURLWithPath: "/bin/sh")
        watchdog.arguments = [
            "-c", "cat >/dev/null; for n in \"$2\" \"$3\" \"$6\"; do \"$1\" netns pids \"$n\" | xargs -r kill -9; "
                + "\"$1\" netns del \"$n\"; done; rm -rf \"$4\" \"$5\"",
            "lab-watchdog", Self.ip, client, server, netns, "/etc/netns/\(server)", router,
        ]
        watchdog.standardInput = lifeline
        watchdog.standardOutput = FileHandle.nullDevice
        watchdog.standardError = FileHandle.nullDevice
        try watchdog.run()

        try ip(["netns", "add", client])
        try ip(["netns", "add", server])
        for (index, link) in ["0", "1"].enumerated() {
            try ip(["link", "add", "c\(link)", "netns", client, "type", "veth", "peer", "name", "s\(link)", "netns", server])
            try ip(["-n", client, "addr", "add", "10.77.\(index + 1).2/24", "dev", "c\(link)"])
            try ip(["-n", server, "addr", "add", "10.77.\(index + 1).1/24", "dev", "s\(link)"])
            try ip(["-n", client, "link", "set", "c\(link)", "up"])
            try ip(["-n", server, "link", "set", "s\(link)", "up"])
        }
        for namespace in [client, server] { try ip(["-n", namespace, "link", "set", "lo", "up"]) }
        try ip(["-n", server, "addr", "add", "\(Self.serviceAddress)/32", "dev", "lo"])
        try ip(["-n", client, "route", "add", "\(Self.serviceAddress)/32", "via", "10.77.1.1", "dev", "c0"])
    }

    private func startNginx(_ tls: TestCertificates, rate: String) throws {
        let temp = folder.appendingPathComponent("tmp").path
        let config = """
            worker_processes 1;
            pid \(folder.path)/nginx.pid;
            error_log \(folder.path)/logs/error.log;
            events { worker_connections 256; }
            http {
                log_format lab '$remote_addr $request_uri $status "$http_range" $body_bytes_sent';
                access_log \(accessLog) lab;
                client_body_temp_path \(temp); proxy_temp_path \(temp); fastcgi_temp_path \(temp);
                uwsgi_temp_path \(temp); scgi_temp_path \(temp);
                # The first link's side, plain http: what the client reaches on a proxy-only network (a PAC file).
                server {
                    listen 10.77.1.1:80;
                    root \(root.path);
                }
                server {
                    listen \(Self.serviceAddress):443 ssl;
                    ssl_certificate \(tls.serverCertificate);
                    ssl_certificate_key \(tls.serverKey);
                    root \(root.path);
                    # A dead connection (a link gone) is given up, and logged, soon.
                    send_timeout 2s;
                    location /slow/ { limit_rate \(rate); }
                }
            }
            """
        let configPath = folder.appendingPathComponent("nginx.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        // Daemons, each its own: the namespace's end (`close`, or the watchdog) kills whatever runs in it.
        try Self.launch(["netns", "exec", server, "/usr/sbin/nginx", "-c", configPath, "-p", folder.path])
        let deadline = Date().addingTimeInterval(10)
        while (try? Self.run(Self.ip, ["netns", "exec", server, "ss", "-Hltn"]))?.contains("\(Self.serviceAddress):443") != true {
            guard Date() < deadline else {
                throw LabError.failed("nginx did not start in the server namespace (\(folder.path)/logs/error.log)")
            }
            usleep(50_000)
        }
    }

    /// Removes the namespaces and stops what runs in them.
    public func close() {
        for namespace in [client, server, router] {
            if let pids = try? Self.run(Self.ip, ["netns", "pids", namespace]) {
                for pid in pids.split(separator: "\n").compactMap({ Int32($0) }) { kill(pid, SIGKILL) }
            }
            _ = try? Self.run(Self.ip, ["netns", "del", namespace])
        }
        for namespace in [client, server] { try? FileManager.default.removeItem(atPath: "/etc/netns/\(namespace)") }
    }

    // MARK: What the tests do to the network

    /// Serves `data` at `path` under the root; returns its https URL as the client names it.
    @discardableResult
    public func serve(_ data: Data, at path: String) throws -> String {
        let file = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
        return url(path)
    }

    public func url(_ path: String) -> String { "https://\(Self.host)/\(path)" }

    /// The client's first link goes down (Wi-Fi off, a cable pulled): its routes go with it.
    public func linkDown() throws { try ip(["-n", client, "link", "set", "c0", "down"]) }

    /// The client's first link comes back, and its route to the service with it (as NetworkManager restores it).
    public func linkUp() throws {
        try ip(["-n", client, "link", "set", "c0", "up"])
        try ip(["-n", client, "route", "replace", "\(Self.serviceAddress)/32", "via", "10.77.1.1", "dev", "c0"])
    }

    /// The client's first link loses its carrier (a cable pulled at the switch, an access point gone): the far end
    /// goes down, the client's link stays up without a carrier, and its routes stay, leading nowhere.
    public func carrierDown() throws { try ip(["-n", server, "link", "set", "s0", "down"]) }

    /// The client knows the first link's gateway without asking (a static neighbour entry), as on a point-to-point
    /// link or a tunnel, which resolve no neighbour: without a carrier its packets are dropped unanswered, and a
    /// connection waits out its connect timeout instead of failing with "no route to host" after the neighbour
    /// probes.
    public func pinFirstGateway() throws {
        let link = try Self.run(Self.ip, ["-n", server, "link", "show", "s0"])
        guard let range = link.range(of: "link/ether [0-9a-f:]{17}", options: .regularExpression) else {
            throw LabError.failed("no address on s0: \(link)")
        }
        let mac = String(link[range].dropFirst("link/ether ".count))
        try ip(["-n", client, "neigh", "replace", "10.77.1.1", "lladdr", mac, "nud", "permanent", "dev", "c0"])
    }

    /// The first link's carrier returns.
    public func carrierUp() throws { try ip(["-n", server, "link", "set", "s0", "up"]) }

    /// The service is reached through the second link from now on, and the first goes down (Wi-Fi to Ethernet).
    public func switchRoute() throws {
        try ip(["-n", client, "route", "replace", "\(Self.serviceAddress)/32", "via", "10.77.2.1", "dev", "c1"])
        try linkDown()
    }

    /// Makes the lab a machine with two links (a laptop on Wi-Fi with a VPN or a LAN server): the service on the
    /// second link (`c1`), and a default route through the router namespace on a third, which leads nowhere (the
    /// router forwards nothing and answers nothing, as a path the CDN is not on). With the second link down, a
    /// connection to the service leaves by the default route and is never answered.
    public func useSecondLinkBesideADefaultRoute() throws {
        try addRouter()
        try Self.run(Self.ip, ["netns", "exec", router, "sysctl", "-qw", "net.ipv4.ip_forward=0"])
        try ip(["-n", client, "route", "add", "default", "via", "10.77.4.1", "dev", "c2"])
        try ip(["-n", client, "route", "replace", "\(Self.serviceAddress)/32", "via", "10.77.2.1", "dev", "c1"])
    }

    /// The second link goes down (`useSecondLinkBesideADefaultRoute`): its routes go with it.
    public func secondLinkDown() throws { try ip(["-n", client, "link", "set", "c1", "down"]) }

    /// The second link comes back, and its route to the service with it.
    public func secondLinkUp() throws {
        try ip(["-n", client, "link", "set", "c1", "up"])
        try ip(["-n", client, "route", "replace", "\(Self.serviceAddress)/32", "via", "10.77.2.1", "dev", "c1"])
    }

    /// Makes the lab a proxy-only network (an office's, a school's): the client keeps its link to the server
    /// namespace's first address (`proxyAddress`), but has no route to the service and cannot resolve its name.
    public func makeProxyOnly() throws {
        try ip(["-n", client, "route", "del", "\(Self.serviceAddress)/32"])
        try "127.0.0.1 localhost\n".write(toFile: "/etc/netns/\(client)/hosts", atomically: true, encoding: .utf8)
    }

    /// Routes the service through a router namespace whose queue toward the client is a home's line: 40 Mbit/s with
    /// room for 300 ms, the server's TCP loss-based (reno, as most servers'), so that a greedy flow fills that queue.
    /// (In the sender's own queue, the kernel's small-queue limits keep it short and the test would measure nothing.)
    public func addBottleneck() throws {
        try addRouter()
        try ip(["link", "add", "r1", "netns", router, "type", "veth", "peer", "name", "s2", "netns", server])
        try bringUp([(router, "r1", "10.77.5.1/24"), (server, "s2", "10.77.5.2/24")])
        for (namespace, link) in [(client, "c2"), (router, "r0"), (router, "r1"), (server, "s2")] {
            _ = try? Self.run(Self.ip, ["netns", "exec", namespace, "ethtool", "-K", link, "tso", "off", "gso", "off", "gro", "off"])
        }
        try Self.run(Self.ip, ["netns", "exec", router, "sysctl", "-qw", "net.ipv4.ip_forward=1"])
        try Self.run(Self.ip, ["netns", "exec", server, "sysctl", "-qw", "net.ipv4.tcp_congestion_control=reno"])
        try ip(["-n", router, "route", "add", "\(Self.serviceAddress)/32", "via", "10.77.5.2"])
        try ip(["-n", server, "route", "add", "10.77.4.0/24", "via", "10.77.5.1"])
        try ip(["-n", client, "route", "replace", "\(Self.serviceAddress)/32", "via", "10.77.4.1", "dev", "c2"])
        try ip(["netns", "exec", router, "tc", "qdisc", "add", "dev", "r0", "root", "tbf", "rate", "40mbit", "burst",
                "16kb", "latency", "300ms"])
    }

    /// Adds the router namespace, joined to the client by `c2`–`r0` (10.77.4.0/24); what it forwards is the
    /// caller's.
    private func addRouter() throws {
        try ip(["netns", "add", router])
        try ip(["-n", router, "link", "set", "lo", "up"])
        try ip(["link", "add", "c2", "netns", client, "type", "veth", "peer", "name", "r0", "netns", router])
        try bringUp([(client, "c2", "10.77.4.2/24"), (router, "r0", "10.77.4.1/24")])
    }

    /// Gives each (namespace, link, address) its address and brings the link up.
    private func bringUp(_ links: [(String, String, String)]) throws {
        for (namespace, link, address) in links {
            try ip(["-n", namespace, "addr", "add", address, "dev", link])
            try ip(["-n", namespace, "link", "set", link, "up"])
        }
    }

    /// The receive buffer (`ss`'s `rb`, bytes) of the connection to the service that has received the most, of
    /// those the process named `command` holds in the client namespace; nil when it holds none.
    public func receiveBufferOfBusiestConnection(of command: String) throws -> Int? {
        let output = try Self.run(Self.ip, ["netns", "exec", client, "ss", "-tmnipH", "dst", "\(Self.serviceAddress)"])
        // A socket's memory (`skmem`) and counters are on indented lines after the socket's.
        var sockets: [String] = []
        for line in output.split(separator: "\n") {
            if line.first?.isWhitespace == true, !sockets.isEmpty { sockets[sockets.count - 1] += line } else { sockets.append(String(line)) }
        }
        func number(_ name: String, in line: String) -> Int? {
            guard let range = line.range(of: "\(name)[0-9]+", options: .regularExpression) else { return nil }
            return Int(line[range].dropFirst(name.count))
        }
        return sockets.filter { $0.contains("\"\(command)\"") }
            .max { (number("bytes_received:", in: $0) ?? 0) < (number("bytes_received:", in: $1) ?? 0) }
            .flatMap { number(",rb", in: $0) }
    }

    /// Where the proxy listens: the server namespace's side of the first link.
    public static let proxyAddress = "10.77.1.1:8888"

    /// Starts tinyproxy (Debian's) in the server namespace at `proxyAddress`, asking for HTTP Basic credentials when
    /// `credentials` are given. Its log names each tunnel (`proxyLog`).
    public func startProxy(credentials: (user: String, password: String)? = nil) throws {
        let config = """
            Port 8888
            Listen 10.77.1.1
            Timeout 60
            MaxClients 32
            LogFile "\(proxyLog)"
            LogLevel Connect
            PidFile "\(folder.path)/tinyproxy.pid"
            Allow 10.77.0.0/16
            ConnectPort 443
            \(credentials.map { "BasicAuth \($0.user) \($0.password)" } ?? "")
            """
        let configPath = folder.appendingPathComponent("tinyproxy.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        _ = FileManager.default.createFile(atPath: proxyLog, contents: nil, attributes: [.posixPermissions: 0o666])
        try Self.launch(["netns", "exec", server, "/usr/bin/tinyproxy", "-c", configPath])
        let deadline = Date().addingTimeInterval(10)
        while (try? Self.run(Self.ip, ["netns", "exec", server, "ss", "-Hltn"]))?.contains(Self.proxyAddress) != true {
            guard Date() < deadline else { throw LabError.failed("tinyproxy did not start (\(proxyLog))") }
            usleep(50_000)
        }
    }

    public var proxyLog: String { folder.appendingPathComponent("logs/tinyproxy.log").path }

    /// nginx's log: one line a request, "CLIENT-ADDRESS URI STATUS "RANGE" BYTES".
    public func requests(for path: String) -> [String] {
        let log = (try? String(contentsOfFile: accessLog, encoding: .utf8)) ?? ""
        return log.split(separator: "\n").map(String.init).filter { $0.contains(" /\(path) ") }
    }

    /// A command in the client namespace, as `Process` arguments: `ip netns exec CLIENT COMMAND…`.
    public func command(_ executable: String, _ arguments: [String]) -> (executable: String, arguments: [String]) {
        (Self.ip, ["netns", "exec", client, executable] + arguments)
    }

    private func ip(_ arguments: [String]) throws { try Self.run(Self.ip, arguments) }

    public enum LabError: Error, CustomStringConvertible {
        case failed(String)
        public var description: String { if case .failed(let why) = self { why } else { "" } }
    }

    /// Starts a daemon with `ip ARGUMENTS` and waits for the launcher only (nothing of its output is read: a daemon
    /// keeps it open).
    static func launch(_ arguments: [String]) throws {
        // posix_spawn and waitpid: Foundation's Process left the launcher of a forking daemon unreaped, and its
        // waitUntilExit never returned.
        var fileActions: posix_spawn_file_actions_t = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&fileActions)
        defer { posix_spawn_file_actions_destroy(&fileActions) }
        for descriptor in Int32(0)...2 {
            posix_spawn_file_actions_addopen(&fileActions, descriptor, "/dev/null", descriptor == 0 ? O_RDONLY : O_WRONLY, 0)
        }
        let argv = ([ip] + arguments).map { strdup($0) } + [nil]
        defer { argv.forEach { free($0) } }
        var pid: pid_t = 0
        guard posix_spawn(&pid, ip, &fileActions, nil, argv, environ) == 0 else {
            throw LabError.failed("cannot run ip \(arguments.joined(separator: " "))")
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        guard status == 0 else { throw LabError.failed("ip \(arguments.joined(separator: " ")) failed (\(status))") }
    }

    @discardableResult
    static func run(_ executable: String, _ arguments: [String]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        let out = Pipe()
        let err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let output = out.fileHandleForReading.readDataToEndOfFile()
        let error = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw LabError.failed("\(executable) \(arguments.joined(separator: " ")): \(String(decoding: error, as: UTF8.self))")
        }
        return String(decoding: output, as: UTF8.self)
    }
}
