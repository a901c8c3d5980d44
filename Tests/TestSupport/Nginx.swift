import Foundation

/// A real nginx on loopback, started for the tests: a plain http port and an https port with a certificate from a
/// CA the tests make (`caFile`), serving `root`. `/slow/` is rate-limited, for tests that need a transfer in
/// flight; `/private/` asks for HTTP Basic credentials (`user`, `password`). Its access log records each request's
/// status and Range header.
public final class Nginx: Sendable {
    public let root: URL
    public let httpPort: Int
    public let httpsPort: Int
    public let caFile: String
    public let accessLog: String
    private let process: Process
    public static let user = "player"
    public static let password = "level-up"

    /// One server for the whole test process.
    public static let shared: Nginx = {
        do {
            return try Nginx()
        } catch {
            fatalError("cannot start nginx: \(error) (scripts/install-dependencies.sh installs it)")
        }
    }()

    public init() throws {
        let folder = TestPlugins.scratch.appendingPathComponent("nginx-\(UUID().uuidString)")
        root = folder.appendingPathComponent("www")
        for sub in ["www", "www/slow", "logs", "tmp"] {
            try FileManager.default.createDirectory(at: folder.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        let tls = try TestCertificates(in: folder)
        caFile = tls.caFile
        accessLog = folder.appendingPathComponent("logs/access.log").path
        httpPort = try Self.freePort()
        httpsPort = try Self.freePort()
        let temp = folder.appendingPathComponent("tmp").path
        let htpasswd = folder.appendingPathComponent("htpasswd").path
        try "\(Self.user):\(try Self.hash(Self.password))\n".write(toFile: htpasswd, atomically: true, encoding: .utf8)
        let config = """
            daemon off;
            worker_processes 1;
            pid \(folder.path)/nginx.pid;
            error_log \(folder.path)/logs/error.log;
            events { worker_connections 256; }
            http {
                log_format ranges '$request_uri $status "$http_range" $body_bytes_sent';
                access_log \(accessLog) ranges;
                client_body_temp_path \(temp); proxy_temp_path \(temp); fastcgi_temp_path \(temp);
                uwsgi_temp_path \(temp); scgi_temp_path \(temp);
                server {
                    listen 127.0.0.1:\(httpPort);
                    listen 127.0.0.1:\(httpsPort) ssl;
                    ssl_certificate \(tls.serverCertificate);
                    ssl_certificate_key \(tls.serverKey);
                    root \(root.path);
                    location /slow/ { limit_rate 1m; }
                    location /private/ { auth_basic "levels"; auth_basic_user_file \(htpasswd); }
                }
            }
            """
        let configPath = folder.appendingPathComponent("nginx.conf").path
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        // A watchdog shell stops nginx when the test process is gone, however it ended: it waits for the end of a
        // pipe only this process writes to. nginx gets none of this process's output, which `swift test` reads to
        // its end.
        process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/sh")
        process.arguments = [
            "-c", "/usr/sbin/nginx -c \"$1\" -p \"$2\" </dev/null >/dev/null 2>&1 & n=$!; cat >/dev/null; kill -QUIT $n",
            "nginx-watchdog", configPath, folder.path,
        ]
        process.standardInput = Self.lifeline
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        try Self.waitForPort(httpPort)
    }

    /// An htpasswd line's hash, made by openssl.
    static func hash(_ password: String) throws -> String {
        let openssl = Process()
        openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
        openssl.arguments = ["passwd", "-apr1", password]
        let out = Pipe()
        openssl.standardOutput = out
        try openssl.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        openssl.waitUntilExit()
        return String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// Held open for the life of the test process: its end tells the watchdogs to stop their nginx.
    private static let lifeline = Pipe()

    /// Puts a file on the server and returns its URL path.
    @discardableResult
    public func serve(_ data: Data, at path: String) throws -> String {
        let file = root.appendingPathComponent(path)
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: file)
        return path
    }

    public func http(_ path: String) -> String { "http://127.0.0.1:\(httpPort)/\(path)" }
    public func https(_ path: String) -> String { "https://localhost:\(httpsPort)/\(path)" }

    /// The access log's lines for `path`: "URI STATUS "RANGE" BYTES".
    public func requests(for path: String) throws -> [String] {
        try String(contentsOfFile: accessLog, encoding: .utf8).split(separator: "\n").map(String.init)
            .filter { $0.hasPrefix("/\(path) ") }
    }

    /// A port nothing listens on right now.
    public static func freePort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw POSIXError(.EADDRINUSE) }
        return Int(UInt16(bigEndian: address.sin_port))
    }

    static func waitForPort(_ port: Int) throws {
        for _ in 0..<200 {
            let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
            var address = sockaddr_in()
            address.sin_family = sa_family_t(AF_INET)
            address.sin_addr.s_addr = inet_addr("127.0.0.1")
            address.sin_port = UInt16(port).bigEndian
            let connected = withUnsafePointer(to: &address) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) == 0
                }
            }
            close(fd)
            if connected { return }
            usleep(25_000)
        }
        throw POSIXError(.ETIMEDOUT)
    }
}

/// A certificate authority and a server certificate for `localhost`, 127.0.0.1 and `names`, made with openssl.
public struct TestCertificates {
    public let caFile: String
    public let serverCertificate: String
    public let serverKey: String

    public init(in folder: URL, names: [String] = []) throws {
        let dir = folder.path
        caFile = "\(dir)/ca.pem"
        serverCertificate = "\(dir)/server.pem"
        serverKey = "\(dir)/server.key"
        let extensions = "\(dir)/server.ext"
        let alternatives = (["DNS:localhost", "IP:127.0.0.1"] + names.map { "DNS:\($0)" }).joined(separator: ",")
        try "subjectAltName=\(alternatives)\nbasicConstraints=CA:FALSE\n"
            .write(toFile: extensions, atomically: true, encoding: .utf8)
        let steps: [[String]] = [
            ["req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", "\(dir)/ca.key", "-out", caFile, "-days", "2",
             "-subj", "/CN=bahost test CA"],
            ["req", "-newkey", "rsa:2048", "-nodes", "-keyout", serverKey, "-out", "\(dir)/server.csr",
             "-subj", "/CN=localhost"],
            ["x509", "-req", "-in", "\(dir)/server.csr", "-CA", caFile, "-CAkey", "\(dir)/ca.key", "-CAcreateserial",
             "-out", serverCertificate, "-days", "2", "-extfile", extensions],
        ]
        for arguments in steps {
            let openssl = Process()
            openssl.executableURL = URL(fileURLWithPath: "/usr/bin/openssl")
            openssl.arguments = arguments
            openssl.standardOutput = FileHandle.nullDevice
            openssl.standardError = FileHandle.nullDevice
            try openssl.run()
            openssl.waitUntilExit()
            guard openssl.terminationStatus == 0 else { throw POSIXError(.EIO) }
        }
    }
}
